"""The reference Studio's snapshot routes, served on snapwake: a Studio keeps its page and puts
this behind it (`uvicorn app:app`, with SNAPWAKE_URL naming the API).

Codex lives under `/web/sandbox/...`, OpenClaw and Hermes under `/web/{kind}/...`:

    GET    .../capabilities                     what can be created, and the default retention
    GET    .../sessions                         the caller's sessions and wakeable snapshots
    POST   .../sessions                         a new agent, {displayName?, retentionMode?}
    POST   .../snapshots/{snapshot_id}/resume   wake the snapshot's agent: its session
    DELETE .../snapshots/{snapshot_id}          {"deleted": true}
    POST   .../sessions/{user_session_id}/activity   {"ok": true}: the agent is in use

The last one is not the reference's: it is what a Studio adds for idle sleep (docs/idle.md).
The Studio calls it when its user sends the agent a message, and every few minutes while the
agent works on a task, so snapwake never puts an agent at work to sleep; snapwake coalesces the
calls, so calling it on every message is fine.

Errors are the reference's `{"detail": {"code", "message", "retryable"}}`.

Two things are better than in the reference, on purpose: a storm of resumes wakes once (snapwake
wakes an agent once however many ask), and a snapshot is a way back to its agent, addressed by
the agent's stable id; the agent wakes from its newest Ready snapshot.

Identity: the caller's bearer token is passed on to snapwake, which verifies it (the Studio and
snapwake trust the same OpenID provider). Against `snapwake serve`, the local header
`X-Snapwake-User` is passed on instead.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

import httpx
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

import snapwake
from snapwake.schema import Agent, Kind, Session, Snapshot

#: The path segment of each kind: Codex is the Studio's "sandbox".
KINDS: dict[str, Kind] = {"sandbox": "codex", "openclaw": "openclaw", "hermes": "hermes"}
TOOL_TYPES = {"codex": "CodeEnv", "openclaw": "ArkClawEnv", "hermes": "HermesEnv"}
#: How long a resume may hold the page's request: the agent usually wakes in seconds.
WAKE_TIMEOUT_S = 60.0


class StudioError(HTTPException):
    def __init__(self, status: int, code: str, message: str, retryable: bool = False) -> None:
        detail = {"code": code, "message": message, "retryable": retryable}
        super().__init__(status_code=status, detail=detail)

    def response(self) -> JSONResponse:
        return JSONResponse({"detail": self.detail}, status_code=self.status_code)


def internal() -> StudioError:
    return StudioError(500, "SANDBOX_INTERNAL_ERROR", "the sandbox service failed")


def not_found(what: str) -> StudioError:
    return StudioError(404, "SANDBOX_SESSION_NOT_FOUND", f"{what} not found")


def studio_error(error: snapwake.SnapwakeError) -> StudioError:
    """snapwake's answer in the reference Studio's words."""
    match error:
        case snapwake.AgentNotFound() | snapwake.SnapshotNotFound() | snapwake.AgentGone():
            return not_found("snapshot")
        case snapwake.Unauthenticated():
            return StudioError(401, "SANDBOX_UNAUTHENTICATED", "sign in again")
        case snapwake.InvalidRequest() | snapwake.PayloadTooLarge():
            return StudioError(422, "SANDBOX_INVALID_REQUEST", error.detail)
        case snapwake.NotConfigured():
            return StudioError(503, "SANDBOX_NOT_CONFIGURED", error.detail)
        case snapwake.NotWakeable() | snapwake.AgentBusy() | snapwake.NotSleepable():
            return StudioError(409, "SANDBOX_SESSION_UNAVAILABLE", error.detail)
        case (
            snapwake.ProviderError()
            | snapwake.ProviderThrottled()
            | snapwake.SessionStuck()
            | snapwake.SnapshotStuck()
            | snapwake.StillWorking()
            | snapwake.TryAgain()
            | snapwake.StoreUnavailable()
            | snapwake.Unreachable()
        ) | snapwake.GatewayError(retryable=True):
            return StudioError(502, "SANDBOX_PROVISIONING_FAILED", str(error), retryable=True)
        case _:
            return internal()


class CreateSession(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    display_name: str | None = Field(default=None, alias="displayName", max_length=40)
    retention_mode: Literal["temporary", "recoverable"] = Field(
        default="recoverable", alias="retentionMode"
    )


def tool_name(kind: Kind) -> str:
    return "veadk-studio-codex" if kind == "codex" else kind


def public_snapshot(agent: Agent, snapshot: Snapshot) -> dict[str, Any]:
    status = snapshot.get("status")
    return {
        "snapshotId": snapshot["snapshot_id"],
        "sessionId": snapshot.get("source_session_id"),
        "userSessionId": user_session_id(agent),
        "status": "Wakeable" if status == "Ready" else status,
        "snapshotStatus": status,
        "reason": snapshot.get("reason"),
        "createdAt": snapshot.get("created_at"),
        "createdBy": agent.get("created_by") or agent.get("owner"),
        "displayName": agent["display_name"],
        "toolName": tool_name(agent["kind"]),
    }


def public_session(agent: Agent, *, listed: bool = False) -> dict[str, Any]:
    """The session's public JSON: never its endpoint (snapwake does not return one either)."""
    session: Session | dict[str, Any] = agent.get("session") or {}
    public = {
        "sessionId": session.get("session_id"),
        "userSessionId": user_session_id(agent),
        "status": session.get("status"),
        "createdAt": session.get("created_at"),
        "expireAt": session.get("expire_at"),
        "toolType": TOOL_TYPES[agent["kind"]],
        "createdBy": agent.get("created_by") or agent.get("owner"),
        "displayName": agent["display_name"],
        "toolName": tool_name(agent["kind"]),
    }
    if listed and agent["kind"] == "codex":
        del public["toolName"]  # as the reference's Codex list
    return public


def user_session_id(agent: Agent) -> str | None:
    # An agent known only by a snapshot that carries no UserSessionId has none.
    agent_id = agent["agent_id"]
    return None if agent_id.startswith("snapshot-") else agent_id


async def caller(request: Request) -> AsyncIterator[snapwake.AsyncClient]:
    """snapwake as the signed-in person, over the app's one connection pool."""
    state = request.app.state
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else ""
    # Only against `snapwake serve`: anyone can send this header.
    user = request.headers.get("x-snapwake-user") if state.local_identity else None
    if not token and not user:
        raise StudioError(401, "SANDBOX_UNAUTHENTICATED", "sign in first")
    lent = Unclosed(state.transport)
    async with snapwake.AsyncClient(
        state.snapwake_url, token=token or None, user=user, transport=lent
    ) as client:
        yield client


def kind_of(kind: str) -> Kind:
    if kind not in KINDS:
        raise not_found("route")
    return KINDS[kind]


Caller = Annotated[snapwake.AsyncClient, Depends(caller)]
KindOf = Annotated[Kind, Depends(kind_of)]


def create_app(
    snapwake_url: str | None = None,
    *,
    local_identity: bool | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> FastAPI:
    """The app. `snapwake_url` defaults to $SNAPWAKE_URL; `local_identity` (default: whether
    $SNAPWAKE_LOCAL_IDENTITY is 1) passes the page's X-Snapwake-User on, for `snapwake serve`."""
    url = snapwake_url or os.environ.get("SNAPWAKE_URL", "http://127.0.0.1:8080")
    own = transport is None
    shared = transport or httpx.AsyncHTTPTransport()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if own:
            await shared.aclose()

    app = FastAPI(title="Studio snapshot routes on snapwake", lifespan=lifespan)
    app.state.snapwake_url = url
    app.state.transport = shared
    app.state.local_identity = (
        os.environ.get("SNAPWAKE_LOCAL_IDENTITY") == "1"
        if local_identity is None
        else local_identity
    )

    async def agent_of(client: snapwake.AsyncClient, kind: Kind, snapshot_id: str) -> Agent:
        """The caller's agent that holds this snapshot; a foreign one is not found. A listing
        snapwake could not read whole is no proof of absence: ask again later."""
        whole = True
        async for page in client.pages(kind=kind):
            whole = whole and not page["partial"] and not page["truncated"]
            for agent in page["agents"]:
                if any(s["snapshot_id"] == snapshot_id for s in agent["snapshots"]):
                    return agent
        if not whole:
            raise StudioError(
                502, "SANDBOX_PROVISIONING_FAILED", "the snapshots could not all be read", True
            )
        raise not_found("snapshot")

    @app.exception_handler(snapwake.SnapwakeError)
    async def answered(_: Request, error: snapwake.SnapwakeError) -> JSONResponse:
        return studio_error(error).response()

    @app.exception_handler(Exception)
    async def failed(_: Request, error: Exception) -> JSONResponse:
        return internal().response()

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0] if error.errors() else {}
        field = ".".join(str(p) for p in first.get("loc", ())[1:])
        message = f"{field}: {first.get('msg', 'invalid')}" if field else "invalid request"
        return StudioError(422, "SANDBOX_INVALID_REQUEST", message).response()

    @app.get("/web/{kind}/capabilities")
    async def capabilities(kind: KindOf, client: Caller) -> dict[str, Any]:
        answer = await client.capabilities()
        mine = next((k for k in answer["kinds"] if k["kind"] == kind), None)
        if mine is None:
            off = {"enabled": False, "reason": f"no {kind} Tool is configured"}
            return {
                "enabled": False,
                "reason": off["reason"],
                "defaultRetentionMode": "temporary",
                "retentionModes": {"temporary": off, "recoverable": off},
            }
        modes = {
            mode: {
                "enabled": mine["retention"][mode]["enabled"],
                "reason": mine["retention"][mode].get("reason"),
            }
            for mode in ("temporary", "recoverable")
        }
        enabled = any(m["enabled"] for m in modes.values())
        return {
            "enabled": enabled,
            "reason": None if enabled else "no sandbox Tool is configured",
            "defaultRetentionMode": mine["default_retention"],
            "retentionModes": modes,
        }

    @app.get("/web/{kind}/sessions")
    async def sessions(kind: KindOf, client: Caller) -> dict[str, Any]:
        live: list[dict[str, Any]] = []
        wakeable: list[dict[str, Any]] = []
        async for agent in client.list(kind=kind):
            if agent.get("session"):
                live.append(public_session(agent, listed=True))
            else:
                wakeable.extend(public_snapshot(agent, s) for s in agent["snapshots"])
        return {"sessions": live, **({"snapshots": wakeable} if wakeable else {})}

    @app.post("/web/{kind}/sessions")
    async def create(
        kind: KindOf, client: Caller, request: Request, body: CreateSession | None = None
    ) -> dict[str, Any]:
        body = body or CreateSession()
        name = (body.display_name or "").strip() or f"{kind.capitalize()} agent"
        # A page that retries its create with the same Idempotency-Key creates one agent.
        key = request.headers.get("idempotency-key")
        agent = await client.create(kind, name, retention=body.retention_mode, idempotency_key=key)
        return public_session(agent)

    @app.post("/web/{kind}/snapshots/{snapshot_id}/resume")
    async def resume(kind: KindOf, snapshot_id: str, client: Caller) -> dict[str, Any]:
        agent = await agent_of(client, kind, snapshot_id)
        # The agent, from its newest Ready snapshot (whichever of its snapshots was clicked,
        # even one not Ready): a storm of clicks is one wake.
        awake = await client.wake(kind, agent["agent_id"], timeout=WAKE_TIMEOUT_S)
        return public_session(awake)

    @app.post("/web/{kind}/sessions/{user_session_id}/activity")
    async def activity(kind: KindOf, user_session_id: str, client: Caller) -> dict[str, bool]:
        # The session's UserSessionId is its agent's stable id.
        await client.activity(kind, user_session_id)
        return {"ok": True}

    @app.delete("/web/{kind}/snapshots/{snapshot_id}")
    async def delete(kind: KindOf, snapshot_id: str, client: Caller) -> dict[str, bool]:
        agent = await agent_of(client, kind, snapshot_id)
        await client.delete(kind, agent["agent_id"], snapshot_id=snapshot_id)
        return {"deleted": True}

    return app


class Unclosed(httpx.AsyncBaseTransport):
    """The app's one transport, lent to each request's client, which must not close it."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        pass


app = create_app()
