"""Every way a call can fail, as exceptions a program can tell apart.

snapwake answers every error as RFC 9457 problem+json with a `code`; each code in the API
description (`ProblemCode`) has its own class here, registered in `PROBLEMS`. Deployed, API
Gateway answers some requests itself as `{"message": ...}` (its authorizer's 401, its own
throttling and timeouts); those are `GatewayError`, except a refused token, which is
`Unauthenticated` whoever said it. Every exception says whether asking again may help
(`retryable`) and after how long the answer asked for (`retry_after`, seconds).
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from .schema import Agent, ProblemCode

#: The longest any answer may make the client wait at once; a longer Retry-After is cut to it.
MAX_RETRY_AFTER = 60.0


class SnapwakeError(Exception):
    """Anything a snapwake call raises (besides mistakes in how it was called)."""

    retryable: bool = False
    #: Seconds the answer asked the caller to wait before asking again, if it said.
    retry_after: float | None = None


class Problem(SnapwakeError):
    """A problem+json answer of snapwake. Its subclass says which `code`."""

    code: ClassVar[str] = ""

    def __init__(
        self,
        body: Mapping[str, Any],
        *,
        status: int,
        retry_after: float | None = None,
    ) -> None:
        self.body = dict(body)
        self.status = status
        self.title = str(body.get("title", ""))
        self.detail = str(body.get("detail", ""))
        self.retryable = bool(body.get("retryable", False))
        self.retry_after = retry_after
        self.request_id: str | None = body.get("request_id")
        #: The request body's field a 422 is about.
        self.field: str | None = body.get("field")
        # An unknown code keeps what the server said on the instance.
        if not type(self).code:
            self.code = str(body.get("code", ""))  # type: ignore[misc]
        super().__init__(f"{status} {self.code}: {self.detail or self.title}")


# One class per code, in the order of the API description.
class Unauthenticated(Problem):
    """No identity, or a token API Gateway or snapwake refused: sign in again."""

    code = "UNAUTHENTICATED"


class NotFound(Problem):
    """Something the caller named does not exist, or is not theirs to see."""


class AgentNotFound(NotFound):
    code = "AGENT_NOT_FOUND"


class SnapshotNotFound(NotFound):
    code = "SNAPSHOT_NOT_FOUND"


class ScheduleNotFound(NotFound):
    code = "SCHEDULE_NOT_FOUND"


class RouteNotFound(NotFound):
    code = "ROUTE_NOT_FOUND"


class MethodNotAllowed(Problem):
    code = "METHOD_NOT_ALLOWED"


class AgentGone(Problem):
    """The agent was deleted: a late wake is refused, never a resurrected sandbox."""

    code = "AGENT_GONE"


class AgentBusy(Problem):
    """A wake, sleep or delete holds the agent; ask again after `retry_after`."""

    code = "AGENT_BUSY"


class PreconditionFailed(Problem):
    """`If-Match` named another version of the agent."""

    code = "PRECONDITION_FAILED"


class PayloadTooLarge(Problem):
    code = "PAYLOAD_TOO_LARGE"


class InvalidRequest(Problem):
    """A bad request; `field` names the body's field when the problem is about one."""

    code = "INVALID_REQUEST"


class NotWakeable(Problem):
    """No live session and no Ready snapshot to wake from (or not the one named)."""

    code = "NOT_WAKEABLE"


class NotSleepable(Problem):
    """A temporary agent keeps no snapshot, so it cannot sleep."""

    code = "NOT_SLEEPABLE"


class NotAwake(Problem):
    """Keepalive needs a live session."""

    code = "NOT_AWAKE"


class ProviderThrottled(Problem):
    code = "PROVIDER_THROTTLED"


class Internal(Problem):
    code = "INTERNAL"


class ProviderError(Problem):
    code = "PROVIDER_ERROR"


class SessionStuck(Problem):
    code = "SESSION_STUCK"


class SnapshotStuck(Problem):
    code = "SNAPSHOT_STUCK"


class NotConfigured(Problem):
    """The deployment has no Tool for that kind and retention."""

    code = "NOT_CONFIGURED"


class TryAgain(Problem):
    code = "TRY_AGAIN"


class StoreUnavailable(Problem):
    code = "STORE_UNAVAILABLE"


def _registry() -> dict[ProblemCode, type[Problem]]:
    found: dict[Any, type[Problem]] = {}
    todo = list(Problem.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.code:
            found[cls.code] = cls
    return found


#: The class of each problem code (tests/test_errors.py: exactly the codes of the API).
PROBLEMS: dict[ProblemCode, type[Problem]] = _registry()


class GatewayError(SnapwakeError):
    """An answer that is not snapwake's: API Gateway's own (`{"message": ...}`, before or
    instead of snapwake), or something else between (a proxy's page, a redirect).

    `retryable` says what the status allows in general: API Gateway's 429 (it never reached
    snapwake), 503 and 504 (it stopped waiting; the function may still be at work). The client
    has already asked again where that was safe; after a 503 to a delete that names a version,
    read the agent before deleting again (docs/clients.md).
    """

    def __init__(self, status: int, message: str, retry_after: float | None) -> None:
        self.status = status
        self.message = message
        self.retryable = status in (429, 503, 504)
        self.retry_after = retry_after
        super().__init__(f"{status}, not an answer of snapwake's: {message}")


class Unreachable(SnapwakeError):
    """No answer: the connection failed, or the answer was lost or too slow."""

    retryable = True

    def __init__(self, reason: str, *, sent: bool = True) -> None:
        #: Whether the request may have reached snapwake (False: no connection was made).
        self.sent = sent
        super().__init__(f"snapwake did not answer: {reason}")


class StillWorking(SnapwakeError):
    """The call's time ran out while snapwake was still at work: waking the agent, putting it to
    sleep, or creating it.

    Nothing failed: the work goes on, and asking again (after `retry_after`) follows it.
    `agent` is the last answer, with its `state` (`waking`, `sleeping`, `starting`), or None when
    the deadline came before any.
    """

    retryable = True

    def __init__(self, agent: Agent | None, retry_after: float | None) -> None:
        self.agent = agent
        self.retry_after = retry_after
        if agent is None:
            super().__init__("still at work when the call's deadline came: ask again")
        else:
            where = f"{agent.get('kind')}/{agent.get('agent_id')}"
            super().__init__(f"{where} is still {agent.get('state')}: ask again")


def retry_after(value: str | None) -> float | None:
    """`Retry-After` as delta-seconds or an HTTP-date (RFC 9110 §10.2.3), at most a minute."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(int(value))
    except ValueError:
        try:
            at = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = at.timestamp() - time.time()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def error_from(status: int, headers: Mapping[str, str], body: bytes) -> SnapwakeError:
    """The exception for a non-2xx answer: its problem, API Gateway's message, or neither."""
    wait = retry_after(headers.get("retry-after"))
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("code"), str) and "status" in parsed:
        cls = PROBLEMS.get(parsed["code"], Problem)
        return cls(parsed, status=status, retry_after=wait)
    message = parsed.get("message") if isinstance(parsed, dict) else None
    if status in (401, 403):
        # API Gateway's authorizer: the token is missing, expired or lacks a scope.
        return Unauthenticated(
            {"code": "UNAUTHENTICATED", "title": "Unauthorized", "detail": str(message or "")},
            status=status,
        )
    return GatewayError(
        status, str(message or f"an answer that is not snapwake's ({status})"), wait
    )
