"""`Client`: snapwake from blocking code, on httpx.Client."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import date
from typing import Any, TypeVar, Unpack, cast

import httpx

from . import protocol, wire
from .errors import Unreachable
from .protocol import Flow, Pause, Reply, Send, UsageBy
from .schema import Agent, Capabilities, KeepAgentAliveResponse, Kind, Listing, Retention
from .schema import ListAgentsParametersQuery as ListQuery
from .schema import IdleSetting, ResumeAgentResponse, Schedule, SleepAgentResponse, Usage

T = TypeVar("T")

#: A bearer token, or a function that returns a current one (called again once after a 401).
Token = str | Callable[[], str] | None


class Client(wire.Calls):
    """snapwake's API for blocking code. Every call is retried where that is safe and ends by
    its deadline: `timeout` seconds (the client's, unless the call says), or for `wake` and
    `sleep`, which wait for the agent, `wait_timeout`.

    Deployed, pass `token` (the signed-in person's JWT, or a function returning it); against
    `snapwake serve`, `user` (and `admin=True`) say who is asking.
    """

    _token: Token

    def __init__(
        self,
        base_url: str,
        *,
        token: Token = None,
        user: str | None = None,
        admin: bool = False,
        timeout: float = 30.0,
        wait_timeout: float = 120.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=wire.base_headers(user, admin, headers),
            transport=transport,
        )
        super().__init__(token, timeout, wait_timeout)
        self._refreshing = threading.Lock()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # The API.

    def capabilities(self, *, timeout: float | None = None) -> Capabilities:
        return self._run(protocol.capabilities(self._deadline(timeout)))

    def get(self, kind: Kind, agent_id: str, *, timeout: float | None = None) -> Agent:
        return self._run(protocol.get_agent(kind, agent_id, self._deadline(timeout)))

    def pages(
        self, *, timeout: float | None = None, **query: Unpack[ListQuery]
    ) -> Iterator[Listing]:
        """Each page of the listing (`owner="*"`, for admins, has many), with what it says
        about itself (`partial`, `truncated`). The query is the route's: `kind`, `state`,
        `owner`, `limit`, and `cursor` to start further on. `timeout` is per page."""
        cursor = query.get("cursor")
        while True:
            page = self._run(protocol.listing(query, cursor, self._deadline(timeout)))
            yield page
            cursor = protocol.next_cursor(page, cursor)
            if cursor is None:
                return

    def list(self, *, timeout: float | None = None, **query: Unpack[ListQuery]) -> Iterator[Agent]:
        """Every agent, newest activity first, page after page."""
        for page in self.pages(timeout=timeout, **query):
            yield from page["agents"]

    def create(
        self,
        kind: Kind,
        display_name: str,
        *,
        retention: Retention | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
    ) -> Agent:
        """A new agent, created once however often the request is repeated. Pass your own
        `idempotency_key` to make a retry after this process died create none either."""
        body = protocol.create_body(kind, display_name, retention)
        key = uuid.uuid4().hex if idempotency_key is None else idempotency_key
        return self._run(protocol.create(body, key, self._deadline(timeout)))

    def wake(
        self,
        kind: Kind,
        agent_id: str,
        *,
        snapshot_id: str | None = None,
        wait: bool = True,
        timeout: float | None = None,
    ) -> ResumeAgentResponse:
        """The agent awake (its `state` "awake"), however many others ask at the same moment.
        `wait=False` returns the first answer, maybe still "waking". Raises `StillWorking`
        when the deadline comes first."""
        flow = protocol.wake(kind, agent_id, snapshot_id, wait, self._deadline(timeout, wait))
        return self._run(flow)

    def sleep(
        self, kind: Kind, agent_id: str, *, wait: bool = True, timeout: float | None = None
    ) -> SleepAgentResponse:
        """The agent asleep: snapshotted, then its session ended. As `wake` otherwise."""
        return self._run(protocol.sleep(kind, agent_id, wait, self._deadline(timeout, wait)))

    def keepalive(
        self, kind: Kind, agent_id: str, ttl_s: int, *, timeout: float | None = None
    ) -> KeepAgentAliveResponse:
        """The live session made to last `ttl_s` more seconds from now."""
        return self._run(protocol.keepalive(kind, agent_id, ttl_s, self._deadline(timeout)))

    def activity(self, kind: Kind, agent_id: str, *, timeout: float | None = None) -> None:
        """Say the agent is in use, so idle sleep leaves it awake (docs/idle.md): when its user
        talks to it, and every few minutes while it works on a task. Coalesced by snapwake."""
        self._run(protocol.activity(kind, agent_id, self._deadline(timeout)))

    def get_idle(self, kind: Kind, agent_id: str, *, timeout: float | None = None) -> IdleSetting:
        """The agent's idle time, the deployment's, and when it would be put to sleep."""
        return self._run(protocol.get_idle(kind, agent_id, self._deadline(timeout)))

    def set_idle(
        self, kind: Kind, agent_id: str, minutes: int | None, *, timeout: float | None = None
    ) -> IdleSetting:
        """Set the agent's idle time in minutes: 0 never, None the deployment's."""
        return self._run(protocol.put_idle(kind, agent_id, minutes, self._deadline(timeout)))

    def delete(
        self,
        kind: Kind,
        agent_id: str,
        *,
        snapshot_id: str | None = None,
        if_match: str | None = None,
        timeout: float | None = None,
    ) -> None:
        """The whole agent deleted, or only `snapshot_id`; done also when already gone."""
        path = protocol.delete_path(kind, agent_id, snapshot_id)
        self._run(protocol.delete(path, if_match, self._deadline(timeout)))

    def get_schedule(
        self, kind: Kind, agent_id: str, *, timeout: float | None = None
    ) -> Schedule | None:
        return self._run(protocol.get_schedule(kind, agent_id, self._deadline(timeout)))

    def set_schedule(
        self,
        kind: Kind,
        agent_id: str,
        *,
        timezone: str,
        wake: str | None = None,
        sleep: str | None = None,
        timeout: float | None = None,
    ) -> Schedule:
        """When the agent wakes and sleeps by itself (five-field cron in `timezone`)."""
        body = protocol.schedule_body(timezone, wake, sleep)
        return self._run(protocol.put_schedule(kind, agent_id, body, self._deadline(timeout)))

    def delete_schedule(self, kind: Kind, agent_id: str, *, timeout: float | None = None) -> None:
        path = f"{protocol.agent_path(kind, agent_id)}/schedule"
        self._run(protocol.delete(path, None, self._deadline(timeout)))

    def usage(
        self,
        *,
        from_: date | str | None = None,
        to: date | str | None = None,
        by: UsageBy = "day",
        owner: str | None = None,
        timeout: float | None = None,
    ) -> Usage:
        """What agents were awake, what woke and slept them, and what that saved, over the UTC
        days `from_` to `to` included (`from_` is the query's `from`, a Python keyword): a `date`
        or "YYYY-MM-DD", by default the last 7 days up to today; a longer range keeps its last
        367. A row per "day" or per "agent"; admins may ask for another `owner`, or "*" for
        everyone's."""
        params = protocol.usage_query(from_, to, by, owner)
        return self._run(protocol.usage(params, self._deadline(timeout)))

    def usage_csv(
        self,
        *,
        from_: date | str | None = None,
        to: date | str | None = None,
        by: UsageBy = "day",
        owner: str | None = None,
        timeout: float | None = None,
    ) -> str:
        """`usage` as CSV text: a header line and the same rows, no total."""
        params = protocol.usage_query(from_, to, by, owner)
        return self._run(protocol.usage_csv(params, self._deadline(timeout)))

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Any route, with the same errors; the decoded JSON answer, or None. Asked again after
        an answer that may have acted only when the route is safe to repeat (`protocol.raw`)."""
        return self._run(protocol.raw(method, path, json, headers or {}, self._deadline(timeout)))

    # Running a flow.

    def _run(self, flow: Flow[T]) -> T:
        try:
            step = next(flow)
            while True:
                if isinstance(step, Pause):
                    time.sleep(step.seconds)
                    step = flow.send(None)
                else:
                    step = flow.send(self._send(step))
        except StopIteration as done:
            return cast(T, done.value)

    def _send(self, send: Send) -> Reply | Unreachable:
        try:
            token, generation = self._token_now()
            response = self._http.send(wire.request(self._http, send, token))
            if response.status_code == 401 and callable(self._token):
                # The token may have expired since it was fetched: one fresh one, once.
                response.close()
                token, _ = self._token_now(refused=generation)
                response = self._http.send(wire.request(self._http, send, token))
            return wire.reply(response)
        except httpx.RequestError as error:
            return wire.unreachable(error)

    def _token_now(self, refused: int | None = None) -> tuple[str | None, int]:
        """The current token and its generation; with `refused`, a fresh one unless another
        thread already replaced the refused one."""
        if not callable(self._token):
            return self._current, 0
        with self._refreshing:
            if self._needs_token(refused):
                return self._took(self._token())
            return self._current, self._generation
