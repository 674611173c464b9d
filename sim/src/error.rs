//! The errors the simulator answers, as an AgentKit error code plus an HTTP status.
//!
//! Codes used (HTTP status in brackets):
//! - `InvalidAction` (400): unknown `Action`; `InvalidVersion` (400): a `Version` other than
//!   `2025-10-30`; `InvalidRegion` (400): a credential-scope region the simulator does not serve.
//! - `InvalidParameter` (400): malformed JSON, a missing or empty required field, an unknown
//!   filter name, `MaxResults` of 0 or above 100, a bad `TtlUnit`;
//!   `InvalidParameter.NextToken` (400): a forged, altered or foreign `NextToken`.
//! - `InvalidResource.NotFound` (404): the object does not exist, or the Tool is in another
//!   region.
//! - `InvalidResource.Status` (409): the Tool is not `Ready` (CreateSession) or the snapshot is
//!   not `Ready` (ResumeSessionFromSnapshot).
//! - `Throttling` (429, with `Retry-After`): a rate limit (`limits.rs`).
//! - Authentication (401): `MissingAuthenticationToken` (no `Authorization` header),
//!   `InvalidAuthorization` (unparsable header), `InvalidAccessKey` (unknown access key),
//!   `SignatureExpired` (`X-Date` more than 15 minutes from wall-clock time),
//!   `InvalidSecurityToken` (the configured STS token is missing, unsigned or different),
//!   `SignatureDoesNotMatch` (everything else: wrong signature, body hash, scope, headers).
//! - Injected faults answer whatever code and status they were given; a *bare* fault answers
//!   its status with a plain-text body and no envelope at all (no error code).

use axum::http::StatusCode;

use snapwake::agentkit::answer::{NOT_FOUND, SIGNATURE_DOES_NOT_MATCH, THROTTLED};

/// An error answered by the simulator (an AgentKit error envelope), or refused by a seed call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code} (HTTP {status}): {message}")]
pub struct SimError {
    /// HTTP status of the answer.
    pub status: u16,
    /// `ResponseMetadata.Error.Code`.
    pub code: String,
    /// `ResponseMetadata.Error.Message` (never carries a secret, signature or Endpoint).
    pub message: String,
    /// `Retry-After` seconds, for throttling answers.
    pub retry_after: Option<u64>,
    /// Answer the bare status with a non-envelope body and no error code, as a load balancer
    /// in front of AgentKit does (an injected fault only).
    pub bare: bool,
}

impl SimError {
    /// An error with `status`, `code` and `message`.
    pub fn new(status: u16, code: impl Into<String>, message: impl Into<String>) -> Self {
        SimError {
            status,
            code: code.into(),
            message: message.into(),
            retry_after: None,
            bare: false,
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        SimError::new(400, "InvalidParameter", message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        SimError::new(404, NOT_FOUND, message)
    }

    pub(crate) fn bad_status(message: impl Into<String>) -> Self {
        SimError::new(409, "InvalidResource.Status", message)
    }

    pub(crate) fn bad_token() -> Self {
        SimError::new(
            400,
            "InvalidParameter.NextToken",
            "NextToken is invalid or does not belong to this request",
        )
    }

    pub(crate) fn throttled(limit: &str, retry_after: u64) -> Self {
        SimError {
            retry_after: Some(retry_after.max(1)),
            ..SimError::new(
                429,
                THROTTLED,
                format!("request rate exceeded for {limit}, retry later"),
            )
        }
    }

    pub(crate) fn unauthorized(code: &str, message: impl Into<String>) -> Self {
        SimError::new(401, code, message)
    }

    pub(crate) fn signature_mismatch(message: impl Into<String>) -> Self {
        SimError::new(401, SIGNATURE_DOES_NOT_MATCH, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        SimError::new(500, "InternalError", message)
    }

    /// The HTTP status, falling back to 500 for an out-of-range injected status.
    pub(crate) fn http_status(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}
