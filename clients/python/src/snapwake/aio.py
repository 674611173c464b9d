"""`AsyncClient`: snapwake from asyncio code, on httpx.AsyncClient. The same calls, with the
same semantics, as `Client` (both run the flows of `snapwake.protocol`)."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
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

#: A bearer token, or a function (plain or async) that returns a current one (called again
#: once after a 401).
AsyncToken = str | Callable[[], str | Awaitable[str]] | None


class AsyncClient(wire.Calls):
    """snapwake's API for asyncio code: see `snapwake.Client`, whose calls these are."""

    _token: AsyncToken

    def __init__(
        self,
        base_url: str,
        *,
        token: AsyncToken = None,
        user: str | None = None,
        admin: bool = False,
        timeout: float = 30.0,
        wait_timeout: float = 120.0,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=wire.base_headers(user, admin, headers),
            transport=transport,
        )
        super().__init__(token, timeout, wait_timeout)
        self._refreshing = asyncio.Lock()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # The API.

    async def capabilities(self, *, timeout: float | None = None) -> Capabilities:
        return await self._run(protocol.capabilities(self._deadline(timeout)))

    async def get(self, kind: Kind, agent_id: str, *, timeout: float | None = None) -> Agent:
        return await self._run(protocol.get_agent(kind, agent_id, self._deadline(timeout)))

    async def pages(
        self, *, timeout: float | None = None, **query: Unpack[ListQuery]
    ) -> AsyncIterator[Listing]:
        cursor = query.get("cursor")
        while True:
            page = await self._run(protocol.listing(query, cursor, self._deadline(timeout)))
            yield page
            cursor = protocol.next_cursor(page, cursor)
            if cursor is None:
                return

    async def list(
        self, *, timeout: float | None = None, **query: Unpack[ListQuery]
    ) -> AsyncIterator[Agent]:
        async for page in self.pages(timeout=timeout, **query):
            for agent in page["agents"]:
                yield agent

    async def create(
        self,
        kind: Kind,
        display_name: str,
        *,
        retention: Retention | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
    ) -> Agent:
        body = protocol.create_body(kind, display_name, retention)
        key = uuid.uuid4().hex if idempotency_key is None else idempotency_key
        return await self._run(protocol.create(body, key, self._deadline(timeout)))

    async def wake(
        self,
        kind: Kind,
        agent_id: str,
        *,
        snapshot_id: str | None = None,
        wait: bool = True,
        timeout: float | None = None,
    ) -> ResumeAgentResponse:
        flow = protocol.wake(kind, agent_id, snapshot_id, wait, self._deadline(timeout, wait))
        return await self._run(flow)

    async def sleep(
        self, kind: Kind, agent_id: str, *, wait: bool = True, timeout: float | None = None
    ) -> SleepAgentResponse:
        flow = protocol.sleep(kind, agent_id, wait, self._deadline(timeout, wait))
        return await self._run(flow)

    async def keepalive(
        self, kind: Kind, agent_id: str, ttl_s: int, *, timeout: float | None = None
    ) -> KeepAgentAliveResponse:
        flow = protocol.keepalive(kind, agent_id, ttl_s, self._deadline(timeout))
        return await self._run(flow)

    async def activity(self, kind: Kind, agent_id: str, *, timeout: float | None = None) -> None:
        await self._run(protocol.activity(kind, agent_id, self._deadline(timeout)))

    async def get_idle(
        self, kind: Kind, agent_id: str, *, timeout: float | None = None
    ) -> IdleSetting:
        return await self._run(protocol.get_idle(kind, agent_id, self._deadline(timeout)))

    async def set_idle(
        self, kind: Kind, agent_id: str, minutes: int | None, *, timeout: float | None = None
    ) -> IdleSetting:
        return await self._run(protocol.put_idle(kind, agent_id, minutes, self._deadline(timeout)))

    async def delete(
        self,
        kind: Kind,
        agent_id: str,
        *,
        snapshot_id: str | None = None,
        if_match: str | None = None,
        timeout: float | None = None,
    ) -> None:
        path = protocol.delete_path(kind, agent_id, snapshot_id)
        await self._run(protocol.delete(path, if_match, self._deadline(timeout)))

    async def get_schedule(
        self, kind: Kind, agent_id: str, *, timeout: float | None = None
    ) -> Schedule | None:
        return await self._run(protocol.get_schedule(kind, agent_id, self._deadline(timeout)))

    async def set_schedule(
        self,
        kind: Kind,
        agent_id: str,
        *,
        timezone: str,
        wake: str | None = None,
        sleep: str | None = None,
        timeout: float | None = None,
    ) -> Schedule:
        body = protocol.schedule_body(timezone, wake, sleep)
        flow = protocol.put_schedule(kind, agent_id, body, self._deadline(timeout))
        return await self._run(flow)

    async def delete_schedule(
        self, kind: Kind, agent_id: str, *, timeout: float | None = None
    ) -> None:
        path = f"{protocol.agent_path(kind, agent_id)}/schedule"
        await self._run(protocol.delete(path, None, self._deadline(timeout)))

    async def usage(
        self,
        *,
        from_: date | str | None = None,
        to: date | str | None = None,
        by: UsageBy = "day",
        owner: str | None = None,
        timeout: float | None = None,
    ) -> Usage:
        params = protocol.usage_query(from_, to, by, owner)
        return await self._run(protocol.usage(params, self._deadline(timeout)))

    async def usage_csv(
        self,
        *,
        from_: date | str | None = None,
        to: date | str | None = None,
        by: UsageBy = "day",
        owner: str | None = None,
        timeout: float | None = None,
    ) -> str:
        params = protocol.usage_query(from_, to, by, owner)
        return await self._run(protocol.usage_csv(params, self._deadline(timeout)))

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Any:
        flow = protocol.raw(method, path, json, headers or {}, self._deadline(timeout))
        return await self._run(flow)

    # Running a flow.

    async def _run(self, flow: Flow[T]) -> T:
        try:
            step = next(flow)
            while True:
                if isinstance(step, Pause):
                    await asyncio.sleep(step.seconds)
                    step = flow.send(None)
                else:
                    step = flow.send(await self._send(step))
        except StopIteration as done:
            return cast(T, done.value)

    async def _send(self, send: Send) -> Reply | Unreachable:
        try:
            # httpx bounds each phase of a request; this bounds the whole, the 401's repeat too.
            async with asyncio.timeout(send.timeout()):
                token, generation = await self._token_now()
                response = await self._http.send(wire.request(self._http, send, token))
                if response.status_code == 401 and callable(self._token):
                    # The token may have expired since it was fetched: one fresh one, once.
                    await response.aclose()
                    token, _ = await self._token_now(refused=generation)
                    response = await self._http.send(wire.request(self._http, send, token))
            return wire.reply(response)
        except TimeoutError as error:
            return wire.unreachable(error)
        except httpx.RequestError as error:
            return wire.unreachable(error)

    async def _token_now(self, refused: int | None = None) -> tuple[str | None, int]:
        """The current token and its generation; with `refused`, a fresh one unless a concurrent
        call already replaced the refused one (fifty calls refused together fetch one token)."""
        if not callable(self._token):
            return self._current, 0
        async with self._refreshing:
            if self._needs_token(refused):
                value = self._token()
                return self._took(await value if inspect.isawaitable(value) else value)
            return self._current, self._generation
