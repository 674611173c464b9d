"""Schedules through the client, against `snapwake serve`: set, read back, removed."""

from __future__ import annotations

from snapwake import AsyncClient

from .serving import Serve


async def test_a_schedule_is_set_read_back_and_removed(serve: Serve) -> None:
    async with AsyncClient(serve.url, user="dana") as dana:
        agent = await dana.create("codex", "Office hours", retention="recoverable")
        agent_id = agent["agent_id"]
        assert await dana.get_schedule("codex", agent_id) is None

        schedule = await dana.set_schedule(
            "codex",
            agent_id,
            timezone="Europe/Berlin",
            wake="30 8 * * MON-FRI",
            sleep="0 19 * * MON-FRI",
        )
        assert (schedule["wake"], schedule["sleep"]) == ("30 8 * * MON-FRI", "0 19 * * MON-FRI")
        assert schedule["next_wake_at"] and schedule["next_sleep_at"]
        assert await dana.get_schedule("codex", agent_id) == schedule
        assert (await dana.get("codex", agent_id))["schedule"] == schedule

        await dana.delete_schedule("codex", agent_id)
        assert await dana.get_schedule("codex", agent_id) is None
        # Removing what is not there is done, too.
        await dana.delete_schedule("codex", agent_id)
