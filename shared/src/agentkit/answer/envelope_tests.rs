use super::*;
use crate::agentkit::answer::SIGNATURE_DOES_NOT_MATCH;

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
