//! The envelope every action answers with, and its errors' classification (docs/agentkit.md):
//! an error may come inside a 200; `ResponseMetadata.Error.Code` decides first, the status second.

use serde::{Deserialize, Serialize};

use super::codes::{is_auth_code, CREATE_SESSION_FAIL, NOT_FOUND};
use super::{AgentKitError, Reread};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agentkit::codes::SIGNATURE_DOES_NOT_MATCH;

    #[test]
    fn codes_decide_before_statuses() {
        assert!(matches!(
            classify("GetSession", 200, Some(NOT_FOUND), ""),
            AgentKitError::NotFound { .. }
        ));
        assert!(matches!(
            classify("GetSession", 404, Some(NOT_FOUND), ""),
            AgentKitError::NotFound { .. }
        ));
        assert!(matches!(
            classify("CreateSession", 500, Some(CREATE_SESSION_FAIL), ""),
            AgentKitError::CreateSessionFailed { .. }
        ));
        assert!(matches!(
            classify("CreateTool", 200, Some("Throttling.User"), ""),
            AgentKitError::Throttled { .. }
        ));
        assert!(matches!(
            classify("CreateTool", 429, None, ""),
            AgentKitError::Throttled { .. }
        ));
        // A bare 503 may come after AgentKit acted: retryable, but not a throttle.
        let bare = classify("ResumeSessionFromSnapshot", 503, None, "");
        assert!(matches!(bare, AgentKitError::Provider { status: 503, .. }));
        assert!(bare.is_retryable() && bare.outcome_unknown());
        let e = classify("GetTool", 500, Some("InternalError"), "boom");
        assert!(e.is_retryable());
        for code in [
            "InvalidAccessKey",
            SIGNATURE_DOES_NOT_MATCH,
            "InvalidSecretToken",
        ] {
            let e = classify("ResumeSessionFromSnapshot", 401, Some(code), "");
            assert!(e.is_unauthorized(), "{code}");
            assert!(!e.outcome_unknown() && !e.is_retryable());
            assert_eq!(e.code(), Some(code));
        }
        assert!(classify("GetTool", 401, None, "").is_unauthorized());
        assert!(!classify("GetTool", 400, Some("InvalidTimestamp"), "").is_unauthorized());
        assert!(!classify("GetTool", 401, Some("SignatureExpired"), "").is_unauthorized());
        assert!(!classify("GetTool", 403, Some("AccessDenied"), "").is_unauthorized());
        let e = classify("GetTool", 500, Some("InvalidAccessKey"), "");
        assert!(!e.is_unauthorized() && e.outcome_unknown());
        let e = classify("GetTool", 400, Some("InvalidParameter"), "bad");
        assert!(!e.is_retryable());
        assert_eq!(e.code(), Some("InvalidParameter"));
    }

    #[test]
    fn envelope_reads_with_and_without_result() {
        let ok: Envelope<super::super::types::Empty> = serde_json::from_str(
            r#"{"ResponseMetadata":{"RequestId":"r","Action":"UpdateTool","Version":"2025-10-30","Service":"agentkit","Region":"cn-beijing"}}"#,
        )
        .unwrap();
        assert!(ok.result.is_none() && ok.response_metadata.error.is_none());
        let err: Envelope<super::super::types::Empty> = serde_json::from_str(
            r#"{"ResponseMetadata":{"RequestId":"r","Error":{"Code":"InvalidResource.NotFound","Message":"m"}},"Result":null}"#,
        )
        .unwrap();
        assert_eq!(err.response_metadata.error.unwrap().code, NOT_FOUND);
    }
}
