"""Waking and putting to sleep, against `snapwake serve`: once however many ask, followed to
the end, and bounded by the call's deadline."""

from __future__ import annotations

import asyncio

import pytest

from snapwake import AsyncClient, Client, StillWorking

from .serving import DATA_HELPER, Serve


async def test_fifty_tasks_wake_one_agent_with_one_resume(serve: Serve) -> None:
    before = serve.resumes()
    async with AsyncClient(serve.url, user="alice") as snapwake:
        woken = await asyncio.gather(*(snapwake.wake("codex", DATA_HELPER) for _ in range(50)))
    assert [agent["state"] for agent in woken] == ["awake"] * 50
    sessions = {agent["session"]["session_id"] for agent in woken if agent.get("session")}
    assert len(sessions) == 1, sessions
    assert any(agent["resumed"] for agent in woken)
    assert serve.resumes() - before == 1


def test_an_agent_sleeps_and_wakes_again_from_its_new_snapshot(serve: Serve) -> None:
    with Client(serve.url, user="bob") as snapwake:
        created = snapwake.create("openclaw", "Night owl", retention="recoverable")
        agent_id = created["agent_id"]
        awake = snapwake.wake("openclaw", agent_id)
        before = serve.resumes()
        assert awake["state"] == "awake"

        asleep = snapwake.sleep("openclaw", agent_id)
        assert (asleep["state"], asleep["slept"]) == ("asleep", True)
        assert asleep["snapshots"], "a sleep keeps a snapshot"

        again = snapwake.wake("openclaw", agent_id)
        assert (again["state"], again["resumed"]) == ("awake", True)
        assert again["session"]["session_id"] != awake["session"]["session_id"]
    assert serve.resumes() - before == 1


def test_keepalive_moves_the_session_end(serve: Serve) -> None:
    with Client(serve.url, user="carol") as snapwake:
        agent = snapwake.create("hermes", "Keeper", retention="recoverable")
        awake = snapwake.wake("hermes", agent["agent_id"])
        kept = snapwake.keepalive("hermes", agent["agent_id"], 4 * 3600)
    assert kept["ttl_s"] == 4 * 3600
    assert kept["session"]["expire_at"] != awake["session"]["expire_at"]


def asleep(snapwake: Client, name: str) -> str:
    """A new codex agent of the caller's, put to sleep: its id."""
    agent_id = snapwake.create("codex", name, retention="recoverable")["agent_id"]
    assert snapwake.sleep("codex", agent_id)["state"] == "asleep"
    return agent_id


def test_a_short_deadline_ends_a_wake_still_at_work_without_failing_it(serve: Serve) -> None:
    with Client(serve.url, user="alice") as snapwake:
        agent_id = asleep(snapwake, "Slow riser")
        before = serve.resumes()
        # Readiness takes 1.5 s here; one second of patience sees it waking.
        with pytest.raises(StillWorking) as still:
            snapwake.wake("codex", agent_id, timeout=1.0)
        assert still.value.retryable
        assert still.value.agent["state"] == "waking"
        assert still.value.retry_after is not None
        # Asking again follows the same wake to its end: still one Resume.
        assert snapwake.wake("codex", agent_id)["state"] == "awake"
    assert serve.resumes() - before == 1


def test_wait_false_answers_at_once_with_the_wake_under_way(serve: Serve) -> None:
    with Client(serve.url, user="alice") as snapwake:
        agent_id = asleep(snapwake, "Quick look")
        before = serve.resumes()
        first = snapwake.wake("codex", agent_id, wait=False)
        assert first["state"] == "waking"
        assert snapwake.wake("codex", agent_id)["state"] == "awake"
    assert serve.resumes() - before == 1
