"""snapwake's client: list, create, wake, put to sleep, keep alive and delete AI-agent sandboxes,
from blocking code (`Client`) or asyncio (`AsyncClient`).

    from snapwake import Client

    with Client("https://api.example", token=lambda: my_jwt()) as snapwake:
        agent = snapwake.wake("codex", agent_id)        # awake, however many others ask

The answers are the API's JSON, typed as `snapwake.schema` (generated from its OpenAPI
description); every error is a `snapwake.SnapwakeError`, one class per problem code.
"""

__version__ = "0.1.0"

from .aio import AsyncClient
from .client import Client
from .errors import (
    PROBLEMS,
    AgentBusy,
    AgentGone,
    AgentNotFound,
    GatewayError,
    Internal,
    InvalidRequest,
    MethodNotAllowed,
    NotAwake,
    NotConfigured,
    NotFound,
    NotSleepable,
    NotWakeable,
    PayloadTooLarge,
    PreconditionFailed,
    Problem,
    ProviderError,
    ProviderThrottled,
    RouteNotFound,
    ScheduleNotFound,
    SessionStuck,
    SnapshotNotFound,
    SnapshotStuck,
    SnapwakeError,
    StillWorking,
    StoreUnavailable,
    TryAgain,
    Unauthenticated,
    Unreachable,
)
from .schema import Agent, Capabilities, Kind, Listing, ProblemCode, Retention, Schedule

__all__ = [
    "PROBLEMS",
    "Agent",
    "AgentBusy",
    "AgentGone",
    "AgentNotFound",
    "AsyncClient",
    "Capabilities",
    "Client",
    "GatewayError",
    "Internal",
    "InvalidRequest",
    "Kind",
    "Listing",
    "MethodNotAllowed",
    "NotAwake",
    "NotConfigured",
    "NotFound",
    "NotSleepable",
    "NotWakeable",
    "PayloadTooLarge",
    "PreconditionFailed",
    "Problem",
    "ProblemCode",
    "ProviderError",
    "ProviderThrottled",
    "Retention",
    "RouteNotFound",
    "Schedule",
    "ScheduleNotFound",
    "SessionStuck",
    "SnapshotNotFound",
    "SnapshotStuck",
    "SnapwakeError",
    "StillWorking",
    "StoreUnavailable",
    "TryAgain",
    "Unauthenticated",
    "Unreachable",
]
