"""What both clients share: between the protocol's `Send` and `Reply` and httpx, and the state
they keep besides their httpx client (`Calls`)."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from . import __version__
from .errors import Unreachable
from .protocol import Deadline, Reply, Send

#: How long to wait for a connection, whatever the call's deadline.
CONNECT_TIMEOUT_S = 10.0


def base_headers(user: str | None, admin: bool, extra: Mapping[str, str] | None) -> dict[str, str]:
    """What every request says: the client, and the local identity of `snapwake serve`
    (`X-Snapwake-User`, `X-Snapwake-Admin`), which a deployed API ignores."""
    headers = {"User-Agent": f"snapwake-python/{__version__}", "Accept": "application/json"}
    if user is not None:
        headers["X-Snapwake-User"] = user
    if admin:
        headers["X-Snapwake-Admin"] = "1"
    headers.update(extra or {})
    return headers


def request(
    http: httpx.Client | httpx.AsyncClient, send: Send, token: str | None
) -> httpx.Request:
    headers = dict(send.headers)
    if send.hold:
        headers["Prefer"] = f"wait={send.hold}"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    left = send.timeout()
    # httpx bounds each phase, not the whole: the async driver bounds the whole as well.
    timeout = httpx.Timeout(left, connect=min(CONNECT_TIMEOUT_S, left))
    return http.build_request(
        send.method,
        send.path,
        params=dict(send.params) or None,
        json=send.body if send.has_body else None,
        headers=headers,
        timeout=timeout,
    )


def reply(response: httpx.Response) -> Reply:
    return Reply(
        response.status_code,
        {name.lower(): value for name, value in response.headers.items()},
        response.content,
    )


#: Failures before any byte of the request left: asking again cannot repeat anything.
NOT_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
)


def unreachable(error: Exception) -> Unreachable:
    # The kind of failure, never the request (its headers carry the token).
    return Unreachable(type(error).__name__, sent=not isinstance(error, NOT_SENT))


class Calls:
    """What both clients keep besides their httpx client: the token and how many the token
    function has given, and the deadlines a call gets unless it says."""

    def __init__(self, token: object, timeout: float, wait_timeout: float) -> None:
        self._token = token
        self._current: str | None = token if isinstance(token, str) else None
        # How many tokens the function has given: a 401 refreshes only the one it refused.
        self._generation = 0
        self.timeout = timeout
        self.wait_timeout = wait_timeout

    def _deadline(self, timeout: float | None, waits: bool = False) -> Deadline:
        if timeout is None:
            timeout = self.wait_timeout if waits else self.timeout
        return Deadline(timeout)

    def _needs_token(self, refused: int | None) -> bool:
        """Whether to call the token function: no token yet, or the newest one was refused
        (a call refused with an older one takes the newer instead)."""
        return self._current is None or refused == self._generation

    def _took(self, token: str) -> tuple[str, int]:
        self._current = token
        self._generation += 1
        return token, self._generation
