"""What the client does with each kind of answer, against scripted answers (httpx's
MockTransport): asking again after Retry-After and never at once, following 202s, one fresh
token after a 401, and a deadline no retry outlives."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta, timezone

import httpx
import pytest

from snapwake import (
    AgentBusy,
    AsyncClient,
    Client,
    GatewayError,
    SnapwakeError,
    StillWorking,
    TryAgain,
    Unauthenticated,
    Unreachable,
)
from snapwake.client import Token

AGENT = {
    "kind": "codex",
    "agent_id": "a1",
    "display_name": "A",
    "retention": "recoverable",
    "state": "awake",
    "snapshots": [],
}


def problem(status: int, code: str, retryable: bool, retry_after: str | None) -> httpx.Response:
    body = {
        "type": "urn:snapwake:problem:x",
        "title": "t",
        "status": status,
        "detail": "d",
        "code": code,
        "retryable": retryable,
    }
    headers = {"content-type": "application/problem+json"}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    return httpx.Response(status, headers=headers, content=json.dumps(body))


def agent(state: str, status: int = 200, retry_after: str | None = None) -> httpx.Response:
    headers = {"retry-after": retry_after} if retry_after else {}
    return httpx.Response(status, headers=headers, json=dict(AGENT, state=state, resumed=True))


class Script:
    """Answers in order, and remembers when each request came."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers: Iterator[httpx.Response | Exception] = iter(answers)
        self.requests: list[tuple[float, httpx.Request]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((time.monotonic(), request))
        answer = next(self.answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def gaps(self) -> list[float]:
        at = [t for t, _ in self.requests]
        return [b - a for a, b in zip(at, at[1:])]


def client(script: Callable[[httpx.Request], httpx.Response], token: Token = None) -> Client:
    return Client("http://snapwake.test", token=token, transport=httpx.MockTransport(script))


def test_a_busy_agent_is_asked_again_after_its_retry_after_not_at_once() -> None:
    script = Script(problem(409, "AGENT_BUSY", True, "1"), httpx.Response(204))
    client(script).delete("codex", "a1")
    assert len(script.requests) == 2
    assert script.gaps()[0] >= 0.95


def test_a_final_problem_is_not_asked_again() -> None:
    script = Script(problem(409, "AGENT_BUSY", False, None))
    with pytest.raises(AgentBusy):
        client(script).delete("codex", "a1")
    assert len(script.requests) == 1


def test_a_wake_follows_202_until_awake_and_says_prefer_wait() -> None:
    script = Script(
        agent("waking", 202, retry_after="0"),
        agent("waking", 202, retry_after="0"),
        agent("awake"),
    )
    assert client(script).wake("codex", "a1")["state"] == "awake"
    assert len(script.requests) == 3
    prefer = [r.headers.get("prefer") for _, r in script.requests]
    assert all(p and p.startswith("wait=") and 0 < int(p[5:]) <= 20 for p in prefer), prefer


def test_a_wake_without_wait_sends_one_short_request() -> None:
    script = Script(agent("waking", 202, retry_after="1"))
    assert client(script).wake("codex", "a1", wait=False)["state"] == "waking"
    assert "prefer" not in script.requests[0][1].headers


def test_a_wake_that_outlives_its_deadline_raises_still_working() -> None:
    script = Script(*[agent("waking", 202, retry_after="1") for _ in range(10)])
    with pytest.raises(StillWorking) as still:
        client(script).wake("codex", "a1", timeout=2.5)
    assert still.value.agent["state"] == "waking" and still.value.retryable
    assert 2 <= len(script.requests) <= 3


def test_no_retry_outlives_the_calls_deadline() -> None:
    script = Script(*[problem(503, "TRY_AGAIN", True, "1") for _ in range(10)])
    started = time.monotonic()
    with pytest.raises(TryAgain) as again:
        client(script).get("codex", "a1", timeout=2.5)
    assert time.monotonic() - started < 2.5
    assert again.value.retry_after == 1.0
    assert 2 <= len(script.requests) <= 3


def test_no_answer_is_asked_again_then_reported() -> None:
    lost = httpx.ConnectError("refused")
    script = Script(lost, agent("awake"))
    assert client(script).get("codex", "a1")["state"] == "awake"
    script = Script(*[httpx.ConnectError("refused") for _ in range(20)])
    with pytest.raises(Unreachable) as unreachable:
        client(script).get("codex", "a1", timeout=1.5)
    assert unreachable.value.retryable


def test_a_token_function_is_asked_again_once_after_a_401() -> None:
    tokens = iter(["expired", "fresh", "never-asked"])
    script = Script(problem(401, "UNAUTHENTICATED", False, None), agent("awake"))
    snapwake = client(script, token=lambda: next(tokens))
    assert snapwake.get("codex", "a1")["state"] == "awake"
    sent = [r.headers["authorization"] for _, r in script.requests]
    assert sent == ["Bearer expired", "Bearer fresh"]

    # Refused again with the fresh one: sign in again, not a loop.
    script = Script(*[httpx.Response(401, json={"message": "Unauthorized"})] * 3)
    tokens = iter(["one", "two", "three"])
    with pytest.raises(Unauthenticated):
        client(script, token=lambda: next(tokens)).get("codex", "a1")
    assert len(script.requests) == 2


def test_the_token_never_appears_in_an_error() -> None:
    script = Script(*[httpx.ConnectError("refused") for _ in range(20)])
    with pytest.raises(Unreachable) as unreachable:
        client(script, token="s3cr3t-token").get("codex", "a1", timeout=1.0)
    assert "s3cr3t" not in repr(unreachable.value) and "s3cr3t" not in str(unreachable.value)


class Tokens:
    """An async token function that counts its calls; `same`: it hands back one string always
    (an identity library still caching a token the server calls expired)."""

    def __init__(self, same: bool = False) -> None:
        self.calls = 0
        self.same = same

    async def __call__(self) -> str:
        self.calls += 1
        await asyncio.sleep(0.01)  # long enough for the other calls to queue behind it
        return "the-same-one" if self.same else f"token-{self.calls}"


async def test_fifty_calls_refused_together_fetch_one_fresh_token() -> None:
    token = Tokens()

    def answer(request: httpx.Request) -> httpx.Response:
        if request.headers["authorization"] == "Bearer token-1":
            return httpx.Response(401, json={"message": "Unauthorized"})
        return agent("awake")

    async with AsyncClient(
        "http://snapwake.test", token=token, transport=httpx.MockTransport(answer)
    ) as snapwake:
        got = await asyncio.gather(*(snapwake.get("codex", "a1") for _ in range(50)))
    assert all(a["state"] == "awake" for a in got)
    assert token.calls == 2


def test_a_create_whose_session_is_not_shown_yet_is_asked_again_with_its_key() -> None:
    script = Script(
        agent("starting", 202, retry_after="0"),
        httpx.Response(201, json=dict(AGENT, state="starting")),
    )
    assert client(script).create("codex", "A")["state"] == "starting"
    keys = {r.headers["idempotency-key"] for _, r in script.requests}
    assert len(script.requests) == 2 and len(keys) == 1


def test_a_wake_of_a_session_still_starting_is_followed_until_awake() -> None:
    script = Script(agent("starting", 200, retry_after="0"), agent("awake"))
    assert client(script).wake("codex", "a1")["state"] == "awake"
    assert len(script.requests) == 2


def test_a_delete_naming_a_version_is_not_repeated_when_the_first_may_have_acted() -> None:
    timed_out = httpx.Response(503, json={"message": "Service Unavailable"})
    script = Script(timed_out, httpx.Response(204))
    client(script).delete("codex", "a1")
    assert len(script.requests) == 2

    script = Script(timed_out, httpx.Response(204))
    with pytest.raises(GatewayError):
        client(script).delete("codex", "a1", if_match='"7"')
    assert len(script.requests) == 1
    # A connection never made did nothing: asked again even so.
    script = Script(httpx.ConnectError("refused"), httpx.Response(204))
    client(script).delete("codex", "a1", if_match='"7"')
    assert len(script.requests) == 2


def test_an_answer_that_is_not_snapwakes_is_an_error_not_a_success() -> None:
    moved = httpx.Response(301, headers={"location": "https://elsewhere.example/"})
    with pytest.raises(GatewayError) as redirect:
        client(Script(moved)).delete("codex", "a1")
    assert redirect.value.status == 301
    page = httpx.Response(200, headers={"content-type": "text/html"}, content=b"<html>")
    with pytest.raises(GatewayError) as html:
        client(Script(page)).get("codex", "a1")
    assert html.value.status == 200


def test_usage_sends_its_days_and_asks_for_csv_by_accept() -> None:
    csv = httpx.Response(200, headers={"content-type": "text/csv; charset=utf-8"}, content=b"d\n")
    script = Script(csv)
    # 23:30 at UTC-2 is the next day in UTC.
    late = datetime(2026, 12, 7, 23, 30, tzinfo=timezone(timedelta(hours=-2)))
    assert client(script).usage_csv(from_=date(2026, 12, 1), to=late, owner="*") == "d\n"
    sent = script.requests[0][1]
    assert sent.url.path == "/v1/usage" and sent.headers["accept"] == "text/csv"
    assert dict(sent.url.params) == {
        "from": "2026-12-01",
        "to": "2026-12-08",
        "by": "day",
        "owner": "*",
    }
    page = httpx.Response(200, headers={"content-type": "text/html"}, content=b"<html>")
    with pytest.raises(GatewayError) as html:
        client(Script(page)).usage_csv()
    assert html.value.status == 200


def test_a_held_wake_the_deadline_cuts_short_is_still_working() -> None:
    def holds_past_any_timeout(request: httpx.Request) -> httpx.Response:
        time.sleep(request.extensions["timeout"]["read"])
        raise httpx.ReadTimeout("held", request=request)

    snapwake = Client(
        "http://snapwake.test", transport=httpx.MockTransport(holds_past_any_timeout)
    )
    started = time.monotonic()
    with pytest.raises(StillWorking) as still:
        snapwake.wake("codex", "a1", timeout=1.5)
    assert still.value.agent is None and still.value.retryable
    assert time.monotonic() - started < 2.5


def test_each_retry_asks_to_be_held_no_longer_than_the_deadline_allows() -> None:
    script = Script(problem(409, "AGENT_BUSY", True, "2"), agent("awake"))
    client(script).wake("codex", "a1", timeout=12)
    first, second = (int(r.headers["prefer"][5:]) for _, r in script.requests)
    assert first >= 6 and second <= first - 2, (first, second)


def test_a_raw_create_without_a_key_is_not_repeated_after_a_lost_answer() -> None:
    lost = httpx.ReadError("lost")
    script = Script(lost, httpx.Response(201, json=AGENT))
    with pytest.raises(Unreachable):
        client(script).request("POST", "/v1/agents", json={"kind": "codex"})
    assert len(script.requests) == 1
    script = Script(lost, httpx.Response(201, json=AGENT))
    keyed = client(script).request(
        "POST", "/v1/agents", json={"kind": "codex"}, headers={"Idempotency-Key": "k1"}
    )
    assert keyed["agent_id"] == "a1" and len(script.requests) == 2


def test_a_cursor_answered_twice_ends_the_walk() -> None:
    page = {"agents": [AGENT], "truncated": False, "partial": [], "next_cursor": "c1"}
    script = Script(*[httpx.Response(200, json=page) for _ in range(3)])
    with pytest.raises(SnapwakeError, match="same cursor"):
        list(client(script).list(owner="*"))
    assert len(script.requests) == 2


async def test_a_token_function_giving_the_same_refused_token_is_asked_once_more_only() -> None:
    token = Tokens(same=True)

    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"message": "Unauthorized"})

    async with AsyncClient(
        "http://snapwake.test", token=token, transport=httpx.MockTransport(refuse)
    ) as snapwake:
        refused = await asyncio.gather(
            *(snapwake.get("codex", "a1") for _ in range(20)), return_exceptions=True
        )
    assert all(isinstance(error, Unauthenticated) for error in refused)
    assert token.calls == 2
