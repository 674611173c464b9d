"""Between the protocol's `Send` and `Reply` and httpx: shared by both clients."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from . import __version__
from .errors import Unreachable
from .protocol import Reply, Send

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
