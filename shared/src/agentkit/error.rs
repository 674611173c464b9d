//! How an AgentKit call can fail, classified for callers (docs/agentkit.md, "Errors and what
//! they recognise"). Provider messages are for logs: [`crate::http::edge`] never shows them.

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

    /// HTTP 429 or a throttling code, past the retries or the deadline. AgentKit did not act.
    #[error("AgentKit throttled {action}")]
    Throttled {
        action: &'static str,
        retry_after: Option<Duration>,
    },

    /// Refused credentials ([`super::codes::is_auth_code`], or a bare 401): AgentKit did not act.
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

    /// No answer. `sent`: the request may have reached AgentKit, and AgentKit may have acted
    /// (anything but a refused connection or a deadline passed before sending).
    #[error("AgentKit {action}: transport error: {detail}")]
    Transport {
        action: &'static str,
        detail: String,
        sent: bool,
    },

    /// An unreadable answer, or a misbehaving listing (a repeated NextToken, too many pages).
    #[error("AgentKit {action}: invalid response: {detail}")]
    InvalidResponse {
        action: &'static str,
        detail: String,
    },

    #[error("AgentKit credentials: {0}")]
    Credentials(String),
}

/// What the client did about credentials AgentKit refused (each told by `Display`); no values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reread {
    /// Not asked yet: the error as classified, before the client decides.
    NotTried,
    Static,
    TooSoon {
        ago: Duration,
        every: Duration,
    },
    Unchanged,
    /// The reason names the secret, never its value.
    Failed(String),
    RetriedOnce,
    /// New ones read, too little time left to resend a non-idempotent call: the next uses them.
    ReplacedNotResent,
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

    /// Whether AgentKit may have acted despite the error (docs/agentkit.md, "Errors and what they
    /// mean"): no answer after sending, any 5xx, an unreadable answer, `ErrCreateSessionFail`.
    /// For Resume or CreateSession that is **unknown**, not failed: reconcile, never resend
    /// blindly. Throttles, NotFound, refused credentials and other 4xx did nothing.
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
