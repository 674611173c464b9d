//! How an AgentKit call can fail, classified so callers can act on it (docs/agentkit.md, "Errors
//! and what they recognise"). Messages from the provider are kept for logs only;
//! [`crate::http::edge`] never shows them to callers.

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

    /// AgentKit did not accept the credentials: an unknown or disabled access key, a signature
    /// made with another secret, an expired STS token ([`super::codes::is_auth_code`], or a
    /// bare 401). Refused before anything was done. `reread` says whether the client re-read
    /// its credentials and what came of it (docs/agentkit.md, "Credentials").
    #[error("AgentKit {action}: credentials refused: {code} (HTTP {status}); {reread}")]
    Unauthorized {
        action: &'static str,
        code: String,
        status: u16,
        message: String,
        reread: Reread,
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

/// What the client did about credentials AgentKit refused. Says nothing of their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reread {
    /// Not asked yet: the error as classified, before the client decides.
    NotTried,
    /// Static credentials from the environment: there is nothing to re-read.
    Static,
    /// The source was re-read `ago`, less than the interval `every`: not again so soon.
    TooSoon { ago: Duration, every: Duration },
    /// Re-read: the secret still holds the refused credentials.
    Unchanged,
    /// Re-reading failed; the previous credentials are kept. The reason names the secret,
    /// never its value.
    Failed(String),
    /// New credentials were read and the call sent once more with them: refused again.
    RetriedOnce,
    /// New credentials were read, but too little time was left to send a non-idempotent call
    /// again; the next call signs with them.
    ReplacedNotResent,
    /// The caller's deadline left no time to re-read.
    NoTime,
}

impl std::fmt::Display for Reread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reread::NotTried => f.write_str("credentials not re-read"),
            Reread::Static => f.write_str("static credentials (environment), nothing to re-read"),
            Reread::TooSoon { ago, every } => write!(
                f,
                "not re-read: last re-read {}s ago, at most one every {}s",
                ago.as_secs(),
                every.as_secs()
            ),
            Reread::Unchanged => f.write_str("re-read: the secret holds the same credentials"),
            Reread::Failed(why) => write!(f, "re-read failed, previous credentials kept: {why}"),
            Reread::RetriedOnce => {
                f.write_str("re-read new credentials and retried once: refused again")
            }
            Reread::ReplacedNotResent => {
                f.write_str("re-read new credentials; too little time left to send this call again")
            }
            Reread::NoTime => f.write_str("not re-read: no time left before the deadline"),
        }
    }
}

impl AgentKitError {
    /// The AgentKit action the error belongs to.
    pub fn action(&self) -> &'static str {
        match self {
            AgentKitError::NotFound { action, .. }
            | AgentKitError::Throttled { action, .. }
            | AgentKitError::Unauthorized { action, .. }
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
            AgentKitError::NotFound { .. } => Some(super::codes::NOT_FOUND),
            AgentKitError::CreateSessionFailed { .. } => Some(super::codes::CREATE_SESSION_FAIL),
            AgentKitError::Provider { code, .. } | AgentKitError::Unauthorized { code, .. } => {
                Some(code)
            }
            _ => None,
        }
    }

    /// Whether AgentKit refused the credentials (docs/agentkit.md, "Credentials").
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, AgentKitError::Unauthorized { .. })
    }

    /// The same error, saying what the client did about refused credentials.
    pub(crate) fn with_reread(self, outcome: Reread) -> Self {
        match self {
            AgentKitError::Unauthorized {
                action,
                code,
                status,
                message,
                ..
            } => AgentKitError::Unauthorized {
                action,
                code,
                status,
                message,
                reread: outcome,
            },
            other => other,
        }
    }

    /// Whether the same call may succeed if simply tried again later.
    pub fn is_retryable(&self) -> bool {
        match self {
            AgentKitError::Throttled { .. }
            | AgentKitError::Transport { .. }
            | AgentKitError::CreateSessionFailed { .. } => true,
            AgentKitError::Provider { status, .. } => *status >= 500,
            // The client already re-read and retried when that could help.
            AgentKitError::NotFound { .. }
            | AgentKitError::Unauthorized { .. }
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
    /// caller must reconcile, never send it again blindly. Throttles, NotFound, refused
    /// credentials and other 4xx are refusals: AgentKit did nothing.
    pub fn outcome_unknown(&self) -> bool {
        match self {
            AgentKitError::Transport { sent, .. } => *sent,
            AgentKitError::Provider { status, .. } => *status >= 500,
            AgentKitError::InvalidResponse { .. } | AgentKitError::CreateSessionFailed { .. } => {
                true
            }
            AgentKitError::NotFound { .. }
            | AgentKitError::Throttled { .. }
            | AgentKitError::Unauthorized { .. }
            | AgentKitError::Credentials(_) => false,
        }
    }
}
