//! The one error type of the crate. Every failure a handler can meet is a variant here, and
//! [`crate::http::edge`] maps each to exactly one problem+json response.

use crate::agentkit::AgentKitError;
use crate::domain::WakeState;
use crate::store::StoreError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No verified identity in the request context.
    #[error("the request carries no verified identity")]
    Unauthenticated,

    /// The agent does not exist, or it is not the caller's (indistinguishable on purpose).
    #[error("no such agent")]
    AgentNotFound,

    /// The agent has no such snapshot (never had it, or it belongs to another agent).
    #[error("the agent has no schedule")]
    ScheduleNotFound,
    /// A field of the request body is not acceptable (422, naming the field).
    #[error("{field}: {detail}")]
    InvalidField { field: &'static str, detail: String },
    #[error("no such snapshot of this agent")]
    SnapshotNotFound,

    /// The agent was deleted; its tombstone answers until it expires.
    #[error("the agent was deleted")]
    AgentGone,

    /// Another operation holds the agent's lock.
    #[error("{detail}")]
    AgentBusy { detail: String, retry_after_s: u64 },

    /// `If-Match` named another version than the current one.
    #[error("the agent changed since version {given}")]
    PreconditionFailed { given: String },

    /// Malformed or unacceptable input (400), or well-formed but not processable (422).
    #[error("{detail}")]
    InvalidRequest { status: u16, detail: String },

    /// The agent exists but cannot be woken (422 `NOT_WAKEABLE`).
    #[error("{0}")]
    NotWakeable(String),

    /// A wake did not produce a usable session; the snapshot is intact and the agent still
    /// wakeable (502, retryable).
    #[error("{0}")]
    WakeFailed(String),

    /// The agent's newest snapshot has been `Creating` for longer than the snapshot timeout
    /// (502 `SNAPSHOT_STUCK`); older snapshots can still be woken by name.
    #[error("snapshot {snapshot_id} has been in progress for longer than the snapshot timeout")]
    SnapshotStuck { snapshot_id: String },

    /// The session a wake started did not become ready within the readiness timeout (502
    /// `SESSION_STUCK`, retryable: the next wake ends it and resumes the snapshot again).
    #[error("{0}")]
    SessionStuck(String),

    /// AgentKit reports a session or snapshot in a status nobody documented: nothing is started
    /// or ended beside it (502 `PROVIDER_ERROR`, retryable).
    #[error("AgentKit reports the {what} in status {status:?}, which snapwake does not know")]
    UnknownStatus { what: &'static str, status: String },

    /// The agent cannot be put to sleep: it lives on a temporary Tool (no snapshots), 422
    /// `NOT_SLEEPABLE`.
    #[error("{0}")]
    NotSleepable(String),

    /// Keepalive needs a live session, and the agent has none (422 `NOT_AWAKE`).
    #[error("{0}")]
    NotAwake(String),

    /// A sleep's snapshot failed (or could not be taken); the session was not ended and the
    /// agent is still awake (502, retryable).
    #[error("{0}")]
    SleepFailed(String),

    /// Not enough of this request's budget is left to do the work safely (a Resume or
    /// CreateSession is never sent with less than one AgentKit request timeout left); nothing
    /// was changed. 503, retryable.
    #[error("{detail}")]
    Deferred { detail: String, retry_after_s: u64 },

    /// A request body above the limit.
    #[error("the request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },

    /// The route exists but this method is not served there.
    #[error("method not allowed; allowed: {allow}")]
    MethodNotAllowed { allow: String },

    /// No route matches.
    #[error("no such route")]
    RouteNotFound,

    /// What the request needs is not deployed or configured (503).
    #[error("{0}")]
    NotConfigured(String),

    /// A call to AgentKit failed.
    #[error(transparent)]
    AgentKit(#[from] AgentKitError),

    /// The table could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),

    /// A failure snapwake cannot explain to the caller; the detail is logged, not returned.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// The problem code a client branches on (docs/http-api.md, "Errors"): the error's own,
    /// whichever layer asks (a wake records it on a failed record; the edge answers it).
    pub fn code(&self) -> &'static str {
        self.status_and_code().1
    }

    /// The HTTP status the error is answered with.
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

    /// The agent's lock is held by an operation in `state`: 409, ask again after
    /// `retry_after_s`.
    pub fn held_by(state: WakeState, retry_after_s: u64) -> Error {
        Error::AgentBusy {
            detail: state.holder_detail().into(),
            retry_after_s,
        }
    }

    /// Too little of the request is left for one whole AgentKit request that must not be cut
    /// short (a Resume, a CreateSession, a CreateSessionSnapshot): nothing was sent; 503,
    /// retryable at once.
    pub fn no_time_to(what: &str) -> Error {
        Error::Deferred {
            detail: format!("not enough time left in this request to {what} safely; retry"),
            retry_after_s: 1,
        }
    }

    /// AgentKit answered `status` for a `what` (session, snapshot): counted (`UnknownStatus`)
    /// and answered 502. The status is AgentKit's text: only a short, plain rendering of it is
    /// kept (it reaches the problem's detail).
    pub fn unknown_status(what: &'static str, status: Option<&str>) -> Error {
        let status: String = status
            .unwrap_or("(none)")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' '))
            .take(40)
            .collect();
        crate::metrics::emit(crate::metrics::Record::of("wake").count("UnknownStatus", 1));
        tracing::warn!(what, %status, "AgentKit answered a status snapwake does not know");
        Error::UnknownStatus { what, status }
    }

    /// A 400 `INVALID_REQUEST`.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Error::InvalidRequest {
            status: 400,
            detail: detail.into(),
        }
    }

    /// A 422 `INVALID_REQUEST`: well-formed, but not acceptable.
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Error::InvalidRequest {
            status: 422,
            detail: detail.into(),
        }
    }
}
