//! How an AgentKit call can fail, classified so callers can act on it (docs/agentkit.md, "Errors
//! and what they recognise"). Messages from the provider are kept for logs only;
//! [`crate::http::problem`] never shows them to callers.

use std::time::Duration;

#[derive(Debug, Clone, thiserror::Error)]
pub enum AgentKitError {
    /// `InvalidResource.NotFound`: the object, or the Tool in this region, does not exist.
    #[error("AgentKit {action}: not found")]
    NotFound {
        action: &'static str,
        message: String,
    },

    /// `ErrCreateSessionFail`: CreateSession may have half-succeeded; reconcile by listing.
    #[error("AgentKit CreateSession may have failed: {message}")]
    CreateSessionFailed { message: String },

    /// HTTP 429 or an explicit throttling code, still failing when the retries or the deadline
    /// ran out. AgentKit refused the request: it surely did not act.
    #[error("AgentKit throttled {action}")]
    Throttled {
        action: &'static str,
        retry_after: Option<Duration>,
    },

    /// Any other error answered by AgentKit.
    #[error("AgentKit {action} failed: {code} (HTTP {status})")]
    Provider {
        action: &'static str,
        code: String,
        status: u16,
        message: String,
    },

    /// The request never got an answer (connection refused, reset, timed out). `sent`: the
    /// request may have reached AgentKit (anything but a refused connection or a deadline
    /// that passed before sending), so AgentKit may have acted.
    #[error("AgentKit {action}: transport error: {detail}")]
    Transport {
        action: &'static str,
        detail: String,
        sent: bool,
    },

    /// The answer could not be read, or a listing misbehaved (a repeated NextToken, too many
    /// pages).
    #[error("AgentKit {action}: invalid response: {detail}")]
    InvalidResponse {
        action: &'static str,
        detail: String,
    },

    /// Credentials are missing or could not be loaded.
    #[error("AgentKit credentials: {0}")]
    Credentials(String),
}

impl AgentKitError {
    /// The AgentKit action the error belongs to.
    pub fn action(&self) -> &'static str {
        match self {
            AgentKitError::NotFound { action, .. }
            | AgentKitError::Throttled { action, .. }
            | AgentKitError::Provider { action, .. }
            | AgentKitError::Transport { action, .. }
            | AgentKitError::InvalidResponse { action, .. } => action,
            AgentKitError::CreateSessionFailed { .. } => "CreateSession",
            AgentKitError::Credentials(_) => "credentials",
        }
    }

    /// The provider's error code, when it gave one.
    pub fn code(&self) -> Option<&str> {
        match self {
            AgentKitError::NotFound { .. } => Some(super::envelope::NOT_FOUND),
            AgentKitError::CreateSessionFailed { .. } => Some(super::envelope::CREATE_SESSION_FAIL),
            AgentKitError::Provider { code, .. } => Some(code),
            _ => None,
        }
    }

    /// Whether the same call may succeed if simply tried again later.
    pub fn is_retryable(&self) -> bool {
        match self {
            AgentKitError::Throttled { .. }
            | AgentKitError::Transport { .. }
            | AgentKitError::CreateSessionFailed { .. } => true,
            AgentKitError::Provider { status, .. } => *status >= 500,
            AgentKitError::NotFound { .. }
            | AgentKitError::InvalidResponse { .. }
            | AgentKitError::Credentials(_) => false,
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, AgentKitError::NotFound { .. })
    }

    /// Whether AgentKit may have carried the request out although it answered an error
    /// (docs/agentkit.md, "Errors and what they mean"): a timeout or dropped connection after
    /// sending, a 5xx (a bare 503 included), an unreadable answer, `ErrCreateSessionFail`. For
    /// a non-idempotent action (Resume, CreateSession) this is **unknown**, not failed: the
    /// caller must reconcile, never send it again blindly. Throttles, NotFound and other 4xx
    /// are refusals: AgentKit did nothing.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            AgentKitError::Transport { sent, .. } => *sent,
            AgentKitError::Provider { status, .. } => *status >= 500,
            AgentKitError::InvalidResponse { .. } | AgentKitError::CreateSessionFailed { .. } => {
                true
            }
            AgentKitError::NotFound { .. }
            | AgentKitError::Throttled { .. }
            | AgentKitError::Credentials(_) => false,
        }
    }
}
