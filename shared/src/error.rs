//! The one error type of the crate. Every failure a handler can meet is a variant here, and
//! [`crate::http::edge`] maps each to exactly one problem+json response.

use crate::agentkit::AgentKitError;
use crate::domain::WakeState;
use crate::store::StoreError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the request carries no verified identity")]
    Unauthenticated,

    /// The agent does not exist, or it is not the caller's (indistinguishable on purpose).
    #[error("no such agent")]
    AgentNotFound,

    #[error("the agent has no schedule")]
    ScheduleNotFound,
    /// A field of the request body is not acceptable (422, naming the field).
    #[error("{field}: {detail}")]
    InvalidField { field: &'static str, detail: String },
    /// The agent has no such snapshot (never had it, or it belongs to another agent).
    #[error("no such snapshot of this agent")]
    SnapshotNotFound,

    /// The agent was deleted; its tombstone answers until it expires.
    #[error("the agent was deleted")]
    AgentGone,

    #[error("{detail}")]
    AgentBusy { detail: String, retry_after_s: u64 },

    #[error("the agent changed since version {given}")]
    PreconditionFailed { given: String },

    /// Malformed or unacceptable input (400), or well-formed but not processable (422).
    #[error("{detail}")]
    InvalidRequest { status: u16, detail: String },

    #[error("{0}")]
    NotWakeable(String),

    /// A wake did not produce a usable session; the snapshot is intact, the agent wakeable.
    #[error("{0}")]
    WakeFailed(String),

    /// The newest snapshot stayed `Creating` past the snapshot timeout; older ones still wake.
    #[error("snapshot {snapshot_id} has been in progress for longer than the snapshot timeout")]
    SnapshotStuck { snapshot_id: String },

    /// The woken session was not ready within the readiness timeout; the next wake ends it.
    #[error("{0}")]
    SessionStuck(String),

    /// AgentKit reports an undocumented status: nothing is started or ended beside it (502).
    #[error("AgentKit reports the {what} in status {status:?}, which snapwake does not know")]
    UnknownStatus { what: &'static str, status: String },

    /// The agent lives on a temporary Tool, without snapshots (422 `NOT_SLEEPABLE`).
    #[error("{0}")]
    NotSleepable(String),

    /// Keepalive needs a live session, and the agent has none (422 `NOT_AWAKE`).
    #[error("{0}")]
    NotAwake(String),

    /// A sleep's snapshot failed; the session was not ended and the agent is still awake.
    #[error("{0}")]
    SleepFailed(String),

    /// Too little of the request's budget is left to work safely; nothing changed (503).
    #[error("{detail}")]
    Deferred { detail: String, retry_after_s: u64 },

    #[error("the request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },

    #[error("method not allowed; allowed: {allow}")]
    MethodNotAllowed { allow: String },

    #[error("no such route")]
    RouteNotFound,

    /// What the request needs is not deployed or configured (503).
    #[error("{0}")]
    NotConfigured(String),

    #[error(transparent)]
    AgentKit(#[from] AgentKitError),

    #[error(transparent)]
    Store(#[from] StoreError),

    /// A failure snapwake cannot explain to the caller; the detail is logged, not returned.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// The problem code a client branches on (docs/http-api.md, "Errors"), whichever layer asks.
    pub fn code(&self) -> &'static str {
        self.status_and_code().1
    }

    pub fn status(&self) -> u16 {
        self.status_and_code().0
    }

    fn status_and_code(&self) -> (u16, &'static str) {
        match self {
            Error::Unauthenticated => (401, "UNAUTHENTICATED"),
            Error::AgentNotFound => (404, "AGENT_NOT_FOUND"),
            Error::ScheduleNotFound => (404, "SCHEDULE_NOT_FOUND"),
            Error::SnapshotNotFound => (404, "SNAPSHOT_NOT_FOUND"),
            Error::RouteNotFound => (404, "ROUTE_NOT_FOUND"),
            Error::InvalidField { .. } => (422, "INVALID_REQUEST"),
            Error::InvalidRequest { status: 422, .. } => (422, "INVALID_REQUEST"),
            Error::InvalidRequest { .. } => (400, "INVALID_REQUEST"),
            Error::AgentGone => (410, "AGENT_GONE"),
            Error::AgentBusy { .. } => (409, "AGENT_BUSY"),
            Error::PreconditionFailed { .. } => (412, "PRECONDITION_FAILED"),
            Error::NotWakeable(_) => (422, "NOT_WAKEABLE"),
            Error::NotSleepable(_) => (422, "NOT_SLEEPABLE"),
            Error::NotAwake(_) => (422, "NOT_AWAKE"),
            Error::PayloadTooLarge { .. } => (413, "PAYLOAD_TOO_LARGE"),
            Error::MethodNotAllowed { .. } => (405, "METHOD_NOT_ALLOWED"),
            Error::NotConfigured(_) => (503, "NOT_CONFIGURED"),
            Error::Deferred { .. } => (503, "TRY_AGAIN"),
            Error::WakeFailed(_) | Error::SleepFailed(_) | Error::UnknownStatus { .. } => {
                (502, "PROVIDER_ERROR")
            }
            Error::SnapshotStuck { .. } => (502, "SNAPSHOT_STUCK"),
            Error::SessionStuck(_) => (502, "SESSION_STUCK"),
            Error::AgentKit(AgentKitError::Throttled { .. }) => (429, "PROVIDER_THROTTLED"),
            Error::AgentKit(AgentKitError::Credentials(_)) => (503, "NOT_CONFIGURED"),
            Error::AgentKit(_) => (502, "PROVIDER_ERROR"),
            Error::Store(StoreError::Unavailable(_)) => (503, "STORE_UNAVAILABLE"),
            Error::Store(StoreError::InvalidCursor(_)) => (400, "INVALID_REQUEST"),
            Error::Internal(_) | Error::Store(_) => (500, "INTERNAL"),
        }
    }

    /// The agent's lock is held by an operation in `state`: 409, ask again after a while.
    pub fn held_by(state: WakeState, retry_after_s: u64) -> Error {
        Error::AgentBusy {
            detail: state.holder_detail().into(),
            retry_after_s,
        }
    }

    /// Too little of the request is left for one whole AgentKit request that must not be cut
    /// short (a Resume, a CreateSession): nothing was sent; 503, retryable at once.
    pub fn no_time_to(what: &str) -> Error {
        Error::Deferred {
            detail: format!("not enough time left in this request to {what} safely; retry"),
            retry_after_s: 1,
        }
    }

    /// AgentKit answered `status` for a `what`: counted and answered 502. Only a short, plain
    /// rendering of AgentKit's text is kept, since it reaches the problem's detail.
    pub fn unknown_status(what: &'static str, status: Option<&str>) -> Error {
        let status: String = status
            .unwrap_or("(none)")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' '))
            .take(40)
            .collect();
        crate::invocation::emit(crate::invocation::Metric::of("wake").count("UnknownStatus", 1));
        tracing::warn!(what, %status, "AgentKit answered a status snapwake does not know");
        Error::UnknownStatus { what, status }
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Error::InvalidRequest {
            status: 400,
            detail: detail.into(),
        }
    }

    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Error::InvalidRequest {
            status: 422,
            detail: detail.into(),
        }
    }
}
