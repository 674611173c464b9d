"""What each call asks of snapwake and how it answers each reply, without doing any I/O.

Each operation is a generator: it yields `Send` (a request to make) or `Pause` (seconds to
wait), receives each Send's `Reply` (or the `Unreachable` that stood in for one), and returns
the call's result. `Client` runs them with httpx's blocking client and `time.sleep`,
`AsyncClient` with its asyncio client and `asyncio.sleep`: following a wake, retrying and
paging are written once, here, for both.

The rules every call keeps (docs/clients.md):

- Every call has a deadline, and no retry or wait outlives it.
- Every call is safe to repeat (a create carries its Idempotency-Key, the rest are reads,
  convergent "ensure" requests or idempotent deletes), so an answer that says asking again
  may help is asked again, after its `Retry-After`: snapwake's retryable 409, 429 and 503,
  API Gateway's 429, 503 and 504, and no answer at all. Never at once: a client that repeats a
  409 at once is the storm snapwake exists to prevent.
- A 202 (still waking, still going to sleep) is not a failure: it is followed after its
  `Retry-After` until the work is done, or the deadline ends it with `StillWorking`.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast
from urllib.parse import quote

from .errors import (
    GatewayError,
    Problem,
    ScheduleNotFound,
    SnapwakeError,
    StillWorking,
    Unreachable,
    error_from,
    retry_after,
)
from .schema import (
    Agent,
    Capabilities,
    CreateBody,
    KeepAgentAliveResponse,
    Kind,
    Listing,
    Retention,
    ResumeAgentResponse,
    Schedule,
    ScheduleBody,
    SleepAgentResponse,
)

#: The longest snapwake holds a request for `Prefer: wait` (its SNAPWAKE_WAIT_S is at most 20),
#: well inside API Gateway's 30 s.
MAX_HOLD_S = 20
#: What a request needs beyond the time snapwake holds it: the answer's own trip.
ANSWER_MARGIN_S = 5.0


@dataclass(frozen=True)
class Send:
    """One HTTP request: a path under the base URL, its query, its JSON body (if any)."""

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    has_body: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Seconds snapwake may hold the request (`Prefer: wait`); 0 asks for a short request.
    hold: int = 0
    #: Whether the request may be repeated when it is unknown whether the first one acted (a
    #: lost answer, API Gateway's 503): all but a delete that names a version (`If-Match`),
    #: which a repeat after a done delete would answer 412.
    repeatable: bool = True
    #: Seconds this request may take, set from the call's deadline when it is sent.
    timeout: float = 30.0


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Reply:
    status: int
    #: Lower-case names.
    headers: Mapping[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


T = TypeVar("T")
#: An operation: yields steps, receives replies, returns its result.
Flow = Generator["Send | Pause", "Reply | Unreachable | None", T]


class Deadline:
    """When a call must be done, on the monotonic clock."""

    def __init__(self, seconds: float) -> None:
        if seconds <= 0:
            raise ValueError(f"a call needs time to run: timeout={seconds}")
        self._at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self._at - time.monotonic())

    def allows(self, pause: float) -> bool:
        return pause < self.left()

    def hold(self) -> int:
        """The `Prefer: wait` to ask for: what is left once an answer has time to come back."""
        return max(0, min(MAX_HOLD_S, int(self.left() - ANSWER_MARGIN_S)))


def backoff(attempt: int) -> float:
    """Before retry `attempt` (1 for the first) when the answer said no `Retry-After`: 0.5 s
    doubling to 8 s, half of it random, so many clients refused together come back apart."""
    ceiling: float = min(0.5 * 2.0 ** min(attempt - 1, 4), 8.0)
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def pause_before_retry(error: Exception, attempt: int, repeatable: bool = True) -> float | None:
    """How long to wait before asking again after `error`, or None when asking again cannot
    help. snapwake's retryable 409, 429 and 503 say nothing was done; so do API Gateway's 429
    and a connection never made. API Gateway's 503/504 and a lost answer leave it unknown, so
    only a `repeatable` request is asked again after them."""
    if isinstance(error, Problem):
        retry = error.retryable and error.status in (409, 429, 503)
    elif isinstance(error, GatewayError):
        retry = error.status == 429 or (error.retryable and repeatable)
    elif isinstance(error, Unreachable):
        retry = not error.sent or repeatable
    else:
        retry = False
    if not retry:
        return None
    said: float | None = getattr(error, "retry_after", None)
    # Retry-After: 0 still means "not in this same instant".
    return max(said, 0.05) if said is not None else backoff(attempt)


def exchange(send: Send, deadline: Deadline) -> Flow[Reply]:
    """Send until a 2xx reply, asking again while the answer allows and the deadline lasts."""
    attempt = 0
    answered: SnapwakeError | None = None
    while True:
        attempt += 1
        timeout = max(min(deadline.left(), send.hold + 2 * ANSWER_MARGIN_S), 1.0)
        reply = yield replace(send, timeout=timeout)
        if isinstance(reply, Reply) and reply.status < 400:
            return reply
        error = (
            reply
            if isinstance(reply, Unreachable)
            else error_from(reply.status, reply.headers, reply.content)
            if isinstance(reply, Reply)
            else Unreachable("the request was not sent", sent=False)
        )
        pause = pause_before_retry(error, attempt, send.repeatable)
        if pause is None or not deadline.allows(pause):
            if isinstance(error, Unreachable) and answered is not None:
                # The deadline cut the last attempt short: what snapwake said before it is
                # the better account of why the call did not succeed.
                raise answered from error
            raise error
        if not isinstance(error, Unreachable):
            answered = error
        yield Pause(pause)


def agent_path(kind: str, agent_id: str) -> str:
    return f"/v1/agents/{quote(kind, safe='')}/{quote(agent_id, safe='')}"


def json_of(flow: Flow[Reply]) -> Flow[Any]:
    reply = yield from flow
    return reply.json()


def capabilities(deadline: Deadline) -> Flow[Capabilities]:
    answer = yield from json_of(exchange(Send("GET", "/v1/capabilities"), deadline))
    return cast(Capabilities, answer)


def get_agent(kind: str, agent_id: str, deadline: Deadline) -> Flow[Agent]:
    answer = yield from json_of(exchange(Send("GET", agent_path(kind, agent_id)), deadline))
    return cast(Agent, answer)


def listing(query: Mapping[str, str], cursor: str | None, deadline: Deadline) -> Flow[Listing]:
    params = dict(query, **({"cursor": cursor} if cursor else {}))
    answer = yield from json_of(exchange(Send("GET", "/v1/agents", params), deadline))
    return cast(Listing, answer)


def create(body: CreateBody, key: str, deadline: Deadline) -> Flow[Agent]:
    """One agent however often the request is repeated: every attempt carries the same key, so
    snapwake answers a repeat with the first attempt's answer (a 409 while it still runs). A 202
    (AgentKit's answer to CreateSession was lost; it may still make the session) is asked again,
    with the same key, until the 201."""
    send = Send("POST", "/v1/agents", body=body, has_body=True, headers={"Idempotency-Key": key})
    while True:
        reply = yield from exchange(send, deadline)
        agent = cast(Agent, reply.json())
        if reply.status != 202:
            return agent
        pause = still_at_work_pause(reply)
        if not deadline.allows(pause):
            raise StillWorking(agent, pause)
        yield Pause(pause)


def follow(
    path: str, body: Any, wait: bool, deadline: Deadline, booting: tuple[str, ...] = ()
) -> Flow[Any]:
    """A wake or a sleep, followed to its end: `Prefer: wait` asks snapwake to hold each
    request, and each 202 is asked again after its `Retry-After`. So is a 200 whose agent is
    in a `booting` state: a wake of an agent whose session is already starting (a create a
    moment ago) answers 200 at once, without holding, as the session needs no Resume."""
    while True:
        hold = deadline.hold() if wait else 0
        send = Send("POST", path, body=body, has_body=body is not None, hold=hold)
        reply = yield from exchange(send, deadline)
        agent = reply.json()
        if not wait or (reply.status != 202 and agent.get("state") not in booting):
            return agent
        pause = still_at_work_pause(reply)
        if not deadline.allows(pause):
            raise StillWorking(agent, pause)
        yield Pause(pause)


def still_at_work_pause(reply: Reply) -> float:
    """After a 202: its Retry-After (snapwake always says one), else a second."""
    said = retry_after(reply.headers.get("retry-after"))
    return max(said, 0.05) if said is not None else 1.0


def wake(
    kind: str, agent_id: str, snapshot_id: str | None, wait: bool, deadline: Deadline
) -> Flow[ResumeAgentResponse]:
    body = {"snapshot_id": snapshot_id} if snapshot_id else None
    path = f"{agent_path(kind, agent_id)}/resume"
    agent = yield from follow(path, body, wait, deadline, booting=("starting",))
    return cast(ResumeAgentResponse, agent)


def sleep(kind: str, agent_id: str, wait: bool, deadline: Deadline) -> Flow[SleepAgentResponse]:
    agent = yield from follow(f"{agent_path(kind, agent_id)}/sleep", None, wait, deadline)
    return cast(SleepAgentResponse, agent)


def keepalive(
    kind: str, agent_id: str, ttl_s: int, deadline: Deadline
) -> Flow[KeepAgentAliveResponse]:
    send = Send(
        "POST", f"{agent_path(kind, agent_id)}/keepalive", body={"ttl_s": ttl_s}, has_body=True
    )
    answer = yield from json_of(exchange(send, deadline))
    return cast(KeepAgentAliveResponse, answer)


def delete(path: str, if_match: str | None, deadline: Deadline) -> Flow[None]:
    headers = {"If-Match": if_match} if if_match else {}
    yield from exchange(Send("DELETE", path, headers=headers, repeatable=not if_match), deadline)


def get_schedule(kind: str, agent_id: str, deadline: Deadline) -> Flow[Schedule | None]:
    try:
        reply = yield from exchange(Send("GET", f"{agent_path(kind, agent_id)}/schedule"), deadline)
    except ScheduleNotFound:
        return None
    return cast(Schedule, reply.json())


def put_schedule(
    kind: str, agent_id: str, body: ScheduleBody, deadline: Deadline
) -> Flow[Schedule]:
    send = Send("PUT", f"{agent_path(kind, agent_id)}/schedule", body=body, has_body=True)
    answer = yield from json_of(exchange(send, deadline))
    return cast(Schedule, answer)


def raw(method: str, path: str, body: Any, deadline: Deadline) -> Flow[Any]:
    send = Send(method.upper(), path, body=body, has_body=body is not None)
    reply = yield from exchange(send, deadline)
    return reply.json() if reply.content else None


# The bodies and paths of the calls, built once for both clients.


def list_query(
    kind: str | None, state: str | None, owner: str | None, limit: int | None
) -> dict[str, str]:
    given = {"kind": kind, "state": state, "owner": owner, "limit": limit}
    return {name: str(value) for name, value in given.items() if value is not None}


def create_body(kind: Kind, display_name: str, retention: Retention | None) -> CreateBody:
    body: CreateBody = {"kind": kind, "display_name": display_name}
    if retention is not None:
        body["retention"] = retention
    return body


def schedule_body(timezone: str, wake: str | None, sleep: str | None) -> ScheduleBody:
    return {"timezone": timezone, "wake": wake, "sleep": sleep}


def delete_path(kind: str, agent_id: str, snapshot_id: str | None) -> str:
    path = agent_path(kind, agent_id)
    return f"{path}/snapshots/{quote(snapshot_id, safe='')}" if snapshot_id else path
