"""What each call asks of snapwake and how it answers each reply, without doing any I/O.

Each operation is a generator: it yields `Send` (a request to make) or `Pause` (seconds to
wait), receives each Send's `Reply` (or the `Unreachable` that stood in for one), and returns
the call's result. `Client` runs them with httpx's blocking client and `time.sleep`,
`AsyncClient` with its asyncio client and `asyncio.sleep`: following a wake, retrying and
paging are written once, here, for both.

The rules every call keeps (docs/clients.md, "The rules every call keeps"):

- Every call has a deadline, and no retry or wait outlives it.
- An answer that says asking again may help is asked again after its `Retry-After`, never at
  once (a client that repeats a 409 at once is the storm snapwake exists to prevent). One that
  leaves unknown whether the request acted (API Gateway's 503, a lost answer) is asked again
  only when the request is safe to repeat whatever the first one did: all of this client's
  calls are but a delete that names a version.
- A 202 (still waking, still going to sleep) is not a failure: it is followed after its
  `Retry-After` until the work is done, or the deadline ends it with `StillWorking`.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timezone
from typing import Any, Literal, TypeVar, cast
from urllib.parse import quote

from .errors import GatewayError, Problem, ScheduleNotFound, SnapwakeError, StillWorking
from .errors import Unreachable, error_from, retry_after
from .schema import Agent, Capabilities, CreateBody, KeepAgentAliveResponse, Kind, Listing
from .schema import IdleSetting, Retention, ResumeAgentResponse, Schedule, ScheduleBody
from .schema import SleepAgentResponse, Usage

#: The longest snapwake holds a request for `Prefer: wait` (its SNAPWAKE_WAIT_S is at most 20),
#: well inside API Gateway's 30 s.
MAX_HOLD_S = 20
#: What a held request needs beyond the time snapwake holds it: the answer's own trip.
ANSWER_MARGIN_S = 5.0
#: The least time worth sending a request with: a pause that would leave less ends the call.
MIN_REQUEST_S = 1.0


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
    #: Whether the request may be sent again when it is unknown whether the first one acted (a
    #: lost answer, API Gateway's 503).
    repeatable: bool = True
    #: When the answer must have come, on the monotonic clock: the call's deadline.
    expires_at: float = 0.0

    def timeout(self) -> float:
        """What is left for this request now (the driver asks again after a 401)."""
        return max(self.expires_at - time.monotonic(), 0.001)


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
        try:
            return json.loads(self.content)
        except ValueError:
            # A proxy's page, or a body cut short: not an answer of snapwake's.
            raise GatewayError(self.status, "an answer that is not JSON", None) from None


T = TypeVar("T")
#: An operation: yields steps, receives replies, returns its result.
Flow = Generator["Send | Pause", "Reply | Unreachable | None", T]


class Deadline:
    """When a call must be done, on the monotonic clock."""

    def __init__(self, seconds: float) -> None:
        if seconds <= 0:
            raise ValueError(f"a call needs time to run: timeout={seconds}")
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def allows(self, pause: float) -> bool:
        """Whether a request is still worth sending after `pause`."""
        return pause + MIN_REQUEST_S <= self.left()

    def hold(self) -> int:
        """The `Prefer: wait` to ask for: what is left once an answer has time to come back."""
        return max(0, min(MAX_HOLD_S, int(self.left() - ANSWER_MARGIN_S)))


def backoff(attempt: int) -> float:
    """Before retry `attempt` (1 for the first) when the answer said no `Retry-After`: 0.5 s
    doubling to 8 s, half of it random, so many clients refused together come back apart."""
    ceiling: float = min(0.5 * 2.0 ** min(attempt - 1, 4), 8.0)
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def pause_asked(said: float | None, otherwise: float) -> float:
    """The pause an answer's `Retry-After` asks for (`said`), else `otherwise`. "0" still
    means "not in this same instant"."""
    return max(said, 0.05) if said is not None else otherwise


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
    return pause_asked(said, backoff(attempt))


def failure(reply: Reply | Unreachable | None) -> SnapwakeError:
    """What a reply that is not a 2xx means."""
    if isinstance(reply, Reply):
        # A 3xx too: snapwake never redirects, and following one could turn a POST into a GET.
        return error_from(reply.status, reply.headers, reply.content)
    return reply if reply is not None else Unreachable("the request was not sent", sent=False)


def exchange(send: Send, deadline: Deadline) -> Flow[Reply]:
    """Send until a 2xx reply, asking again while the answer allows and the deadline lasts."""
    attempt = 0
    answered: SnapwakeError | None = None
    while True:
        attempt += 1
        # Each attempt asks snapwake to hold it no longer than what is left allows.
        hold = min(send.hold, deadline.hold())
        reply = yield replace(send, hold=hold, expires_at=deadline.at)
        if isinstance(reply, Reply) and 200 <= reply.status < 300:
            return reply
        error = failure(reply)
        pause = pause_before_retry(error, attempt, send.repeatable)
        if pause is not None and deadline.allows(pause):
            if not isinstance(error, Unreachable):
                answered = error
            yield Pause(pause)
            continue
        if isinstance(error, Unreachable) and send.repeatable and answered is not None:
            # The deadline cut short an attempt that could have been repeated: what snapwake
            # said before it is the better account of why the call did not succeed.
            raise answered from error
        raise error


def settle(send: Send, deadline: Deadline, busy: Callable[[Reply, Any], bool]) -> Flow[Any]:
    """`exchange`, then ask again after each answer that is `busy` (still at work: a 202) until
    one that is not. The deadline ends it with `StillWorking`, which carries the last answer:
    the work goes on, and asking again follows it."""
    agent: Any = None
    while True:
        try:
            reply = yield from exchange(send, deadline)
        except Unreachable as lost:
            if deadline.allows(0):
                raise
            # Not the network: the deadline ended a request snapwake was still holding.
            raise StillWorking(agent, None) from lost
        agent = reply.json()
        if not busy(reply, agent):
            return agent
        pause = pause_asked(retry_after(reply.headers.get("retry-after")), 1.0)
        if not deadline.allows(pause):
            raise StillWorking(agent, pause)
        yield Pause(pause)


def agent_path(kind: str, agent_id: str) -> str:
    return f"/v1/agents/{quote(kind, safe='')}/{quote(agent_id, safe='')}"


def json_of(send: Send, deadline: Deadline) -> Flow[Any]:
    reply = yield from exchange(send, deadline)
    return reply.json()


def capabilities(deadline: Deadline) -> Flow[Capabilities]:
    answer = yield from json_of(Send("GET", "/v1/capabilities"), deadline)
    return cast(Capabilities, answer)


def get_agent(kind: str, agent_id: str, deadline: Deadline) -> Flow[Agent]:
    answer = yield from json_of(Send("GET", agent_path(kind, agent_id)), deadline)
    return cast(Agent, answer)


def listing(query: Mapping[str, Any], cursor: str | None, deadline: Deadline) -> Flow[Listing]:
    params = {name: str(value) for name, value in query.items() if value is not None}
    params.pop("cursor", None)
    if cursor:
        params["cursor"] = cursor
    answer = yield from json_of(Send("GET", "/v1/agents", params), deadline)
    return cast(Listing, answer)


def next_cursor(page: Listing, cursor: str | None) -> str | None:
    """Where the next page starts, or None after the last. A cursor answered twice would page
    forever: that is an answer snapwake never gives."""
    following = page.get("next_cursor")
    if following is not None and following == cursor:
        raise SnapwakeError(f"the listing answered the same cursor twice ({following[:40]})")
    return following or None


def create(body: CreateBody, key: str, deadline: Deadline) -> Flow[Agent]:
    """One agent however often the request is repeated: every attempt carries the same key, so
    snapwake answers a repeat with the first attempt's answer (a 409 while it still runs). A 202
    (AgentKit's answer to CreateSession was lost; it may still make the session) is asked again,
    with the same key, until the 201."""
    send = Send("POST", "/v1/agents", body=body, has_body=True, headers={"Idempotency-Key": key})
    agent = yield from settle(send, deadline, lambda reply, _: reply.status == 202)
    return cast(Agent, agent)


def follow(
    path: str, body: Any, wait: bool, deadline: Deadline, booting: tuple[str, ...] = ()
) -> Flow[Any]:
    """A wake or a sleep, followed to its end: `Prefer: wait` asks snapwake to hold each
    request, and each 202 is asked again after its `Retry-After`. So is a 200 whose agent is
    in a `booting` state: a wake of an agent whose session is already starting (a create a
    moment ago) answers 200 at once, without holding, as the session needs no Resume.
    Without `wait`, one short request."""

    def busy(reply: Reply, agent: Any) -> bool:
        return wait and (reply.status == 202 or agent.get("state") in booting)

    send = Send("POST", path, body=body, has_body=body is not None, hold=MAX_HOLD_S if wait else 0)
    return (yield from settle(send, deadline, busy))


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
    path = f"{agent_path(kind, agent_id)}/keepalive"
    answer = yield from json_of(Send("POST", path, body={"ttl_s": ttl_s}, has_body=True), deadline)
    return cast(KeepAgentAliveResponse, answer)


def activity(kind: str, agent_id: str, deadline: Deadline) -> Flow[None]:
    """The agent is in use (docs/idle.md): idle sleep leaves it awake. Repeating it is harmless."""
    yield from exchange(Send("POST", f"{agent_path(kind, agent_id)}/activity"), deadline)


def get_idle(kind: str, agent_id: str, deadline: Deadline) -> Flow[IdleSetting]:
    answer = yield from json_of(Send("GET", f"{agent_path(kind, agent_id)}/idle"), deadline)
    return cast(IdleSetting, answer)


def put_idle(
    kind: str, agent_id: str, minutes: int | None, deadline: Deadline
) -> Flow[IdleSetting]:
    body = {"minutes": minutes}
    send = Send("PUT", f"{agent_path(kind, agent_id)}/idle", body=body, has_body=True)
    answer = yield from json_of(send, deadline)
    return cast(IdleSetting, answer)


def delete(path: str, if_match: str | None, deadline: Deadline) -> Flow[None]:
    """A delete is done also when the agent was already gone (204), so repeating one is safe,
    unless it names a version: after a delete that went through, that repeat would answer 412
    (docs/http-api.md: "A delete: read the agent first")."""
    headers = {"If-Match": if_match} if if_match else {}
    yield from exchange(Send("DELETE", path, headers=headers, repeatable=not if_match), deadline)


def get_schedule(kind: str, agent_id: str, deadline: Deadline) -> Flow[Schedule | None]:
    try:
        answer = yield from json_of(
            Send("GET", f"{agent_path(kind, agent_id)}/schedule"), deadline
        )
    except ScheduleNotFound:
        return None
    return cast(Schedule, answer)


def put_schedule(
    kind: str, agent_id: str, body: ScheduleBody, deadline: Deadline
) -> Flow[Schedule]:
    send = Send("PUT", f"{agent_path(kind, agent_id)}/schedule", body=body, has_body=True)
    answer = yield from json_of(send, deadline)
    return cast(Schedule, answer)


def usage(params: Mapping[str, str], deadline: Deadline) -> Flow[Usage]:
    answer = yield from json_of(Send("GET", "/v1/usage", params), deadline)
    return cast(Usage, answer)


def usage_csv(params: Mapping[str, str], deadline: Deadline) -> Flow[str]:
    """The same report as CSV (`Accept: text/csv`): a header line and the rows, no total."""
    send = Send("GET", "/v1/usage", params, headers={"Accept": "text/csv"})
    reply = yield from exchange(send, deadline)
    if not reply.headers.get("content-type", "").startswith("text/csv"):
        # A proxy's page, or a server that does not know CSV: not the report.
        raise GatewayError(reply.status, "an answer that is not CSV", None)
    return reply.content.decode("utf-8")


#: The POST routes whose repeat carries the same operation on (convergent, or an end set from now).
CONVERGENT_POSTS = ("/resume", "/sleep", "/keepalive", "/activity")


def raw(
    method: str, path: str, body: Any, headers: Mapping[str, str], deadline: Deadline
) -> Flow[Any]:
    """Any route. Repeated after an ambiguous failure only when that is safe: GET, PUT, a
    DELETE without If-Match, a convergent POST, or any request with an Idempotency-Key."""
    method = method.upper()
    named = {name.lower() for name in headers}
    repeatable = (
        method in ("GET", "HEAD", "PUT")
        or (method == "DELETE" and "if-match" not in named)
        or (method == "POST" and path.rstrip("/").endswith(CONVERGENT_POSTS))
        or "idempotency-key" in named
    )
    send = Send(method, path, body=body, has_body=body is not None, headers=headers)
    reply = yield from exchange(replace(send, repeatable=repeatable), deadline)
    return reply.json() if reply.content else None


# The bodies and paths of the calls, built once for both clients.


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


#: How a usage report is grouped: a row per UTC day, or per agent.
UsageBy = Literal["day", "agent"]


def usage_query(
    from_: date | str | None, to: date | str | None, by: UsageBy, owner: str | None
) -> dict[str, str]:
    """The query of `GET /v1/usage`: `from_` is its `from` (a Python keyword)."""
    query = {"from": from_, "to": to}
    params = {name: day_of(day) for name, day in query.items() if day is not None}
    params["by"] = by
    if owner is not None:
        params["owner"] = owner
    return params


def day_of(day: date | str) -> str:
    """A day as YYYY-MM-DD: a `date`, a `datetime` (its UTC day when it has a time zone), or a
    string, sent as it is (snapwake answers 400 to one that is not a day)."""
    if isinstance(day, datetime):
        day = (day.astimezone(timezone.utc) if day.tzinfo else day).date()
    return day.isoformat() if isinstance(day, date) else day
