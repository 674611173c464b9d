//! What an AgentKit answer means (docs/agentkit.md), in the order a call reads it:
//!
//! 1. its body, read with a cap (docs/security.md, "Bounded reads"): AgentKit's largest answer
//!    is tens of KiB, so a bigger body is a misbehaving peer that must not take our memory;
//! 2. its envelope: an error may come inside a 200, and `ResponseMetadata.Error.Code` decides
//!    first, the status second;
//! 3. the error, classified for callers ("Errors and what they recognise"); provider messages
//!    are for logs, and [`crate::http::edge`] never shows them;
//! 4. whether and when to try again: only "not now" is retried (429, 503, a throttling code,
//!    no answer), with exponential waits and jitter so callers freed by one throttle do not
//!    return in lock step; a `Retry-After` wins, and no wait passes the deadline.

use crate::agentkit::types::Action;
use crate::invocation::Deadline;
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Why a body was not read.
#[derive(Debug)]
pub enum Unread {
    TooLarge { limit: usize },
    Transport(reqwest::Error),
}

/// The body of `resp`, at most `limit` bytes.
pub async fn read_bounded(mut resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, Unread> {
    if resp
        .content_length()
        .is_some_and(|declared| declared > limit as u64)
    {
        return Err(Unread::TooLarge { limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(Unread::Transport)? {
        if body.len() + chunk.len() > limit {
            return Err(Unread::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ApiError {
    pub code: String,
    pub message: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ResponseMetadata {
    pub request_id: String,
    pub action: String,
    pub version: String,
    pub service: String,
    pub region: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Envelope<T> {
    pub response_metadata: ResponseMetadata,
    #[serde(default = "Option::default", skip_serializing_if = "Option::is_none")]
    pub result: Option<T>,
}

/// Whether an error code means "slow down".
pub fn is_throttling_code(code: &str) -> bool {
    let c = code.to_ascii_lowercase();
    c.contains("throttl") || c.contains("toomanyrequests") || c.contains("limitexceeded")
}

/// Classify an error answered by AgentKit; `code` is `ResponseMetadata.Error.Code`, if any.
pub fn classify(
    action: &'static str,
    status: u16,
    code: Option<&str>,
    message: &str,
) -> AgentKitError {
    match code {
        Some(NOT_FOUND) => AgentKitError::NotFound {
            action,
            message: message.into(),
        },
        Some(CREATE_SESSION_FAIL) => AgentKitError::CreateSessionFailed {
            message: message.into(),
        },
        Some(c) if is_throttling_code(c) => AgentKitError::Throttled {
            action,
            retry_after: None,
        },
        // Under 500 only: a 5xx may come after AgentKit acted, whatever its code says.
        Some(c) if is_auth_code(c) && status < 500 => AgentKitError::Unauthorized {
            action,
            code: c.to_string(),
            status,
            message: message.into(),
            reread: Reread::NotTried,
        },
        // A bare 429 refuses the request; a bare 503 (a gateway's page, no envelope) says
        // nothing of whether AgentKit acted, so it is a provider error, not a throttle.
        None if status == 429 => AgentKitError::Throttled {
            action,
            retry_after: None,
        },
        None if status == 401 => AgentKitError::Unauthorized {
            action,
            code: "HttpError".into(),
            status,
            message: message.into(),
            reread: Reread::NotTried,
        },
        _ => AgentKitError::Provider {
            action,
            code: code.unwrap_or("HttpError").to_string(),
            status,
            message: message.into(),
        },
    }
}

/// Whether an HTTP status alone asks for a retry (429 and 503 always do, whatever the code).
pub fn is_retry_status(status: u16) -> bool {
    status == 429 || status == 503
}

/// The object (or the Tool in this region) does not exist.
pub const NOT_FOUND: &str = "InvalidResource.NotFound";
/// CreateSession may have half-succeeded.
pub const CREATE_SESSION_FAIL: &str = "ErrCreateSessionFail";
pub const THROTTLED: &str = "Throttling";
pub const SIGNATURE_DOES_NOT_MATCH: &str = "SignatureDoesNotMatch";

/// Codes refusing who signed: Volcengine's common (gateway) codes for a bad key, secret or STS
/// token, and the simulator's `InvalidSecurityToken`. Not clock skew (`InvalidTimestamp`,
/// `SignatureExpired`) nor `AccessDenied` (a permission): other credentials would not help.
pub const AUTH_CODES: &[&str] = &[
    "InvalidAccessKey",
    SIGNATURE_DOES_NOT_MATCH,
    "InvalidSecretToken",
    "InvalidSecurityToken",
    "MissingAuthenticationToken",
    "MissingSignature",
    "InvalidAuthorization",
    "InvalidCredential",
];

pub fn is_auth_code(code: &str) -> bool {
    AUTH_CODES.contains(&code)
}

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

    /// Refused credentials ([`super::answer::is_auth_code`], or a bare 401): AgentKit did not act.
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
            AgentKitError::NotFound { .. } => Some(super::answer::NOT_FOUND),
            AgentKitError::CreateSessionFailed { .. } => Some(super::answer::CREATE_SESSION_FAIL),
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (docs/agentkit.md, "Retries, throttling and deadlines": 2).
    pub max_retries: u32,
    /// The first backoff; doubled for each further retry.
    pub base: Duration,
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            base: Duration::from_millis(200),
            max_wait: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based): the service's `Retry-After` when it gave
    /// one, else a random wait in `[cap/2, cap]` with `cap = base * 2^retry`.
    pub fn wait(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_wait);
        }
        let cap = self
            .base
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_wait);
        let half = cap / 2;
        half + Duration::from_nanos(fastrand::u64(0..=(cap - half).as_nanos() as u64))
    }

    /// The wait before retry `retry`, or `None` when retries are spent or it would pass `deadline`.
    pub fn next_wait(
        &self,
        retry: u32,
        retry_after: Option<Duration>,
        deadline: Deadline,
    ) -> Option<Duration> {
        if retry >= self.max_retries {
            return None;
        }
        let wait = self.wait(retry, retry_after);
        deadline.allows(wait).then_some(wait)
    }
}

/// Parse a `Retry-After` header given in seconds (HTTP dates are not used by AgentKit).
pub fn parse_retry_after(value: Option<&str>) -> Option<Duration> {
    value?.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// The result of an answer, or its classified error: the envelope decides before the status.
pub(super) fn read_envelope<A: Action>(
    status: u16,
    bytes: &[u8],
) -> Result<A::Output, AgentKitError> {
    let parsed: Result<Envelope<A::Output>, _> = serde_json::from_slice(bytes);
    match parsed {
        Ok(env) => {
            if let Some(err) = env.response_metadata.error {
                return Err(classify(
                    A::NAME,
                    status,
                    Some(err.code.as_str()),
                    &err.message,
                ));
            }
            if !(200..300).contains(&status) {
                return Err(classify(A::NAME, status, None, ""));
            }
            Ok(env.result.unwrap_or_default())
        }
        Err(e) if (200..300).contains(&status) => Err(AgentKitError::InvalidResponse {
            action: A::NAME,
            detail: format!("unreadable envelope: {e}"),
        }),
        Err(_) => Err(classify(A::NAME, status, None, "")),
    }
}

#[cfg(test)]
mod envelope_tests;

#[cfg(test)]
mod retry_tests;
