//! Unit tests of `client`.

use super::*;
use crate::agentkit::types::{GetSession, Session};

#[test]
fn envelope_errors_win_over_a_200() {
    let body =
        br#"{"ResponseMetadata":{"Error":{"Code":"InvalidResource.NotFound","Message":"no"}}}"#;
    let err = read_envelope::<GetSession>(200, body).unwrap_err();
    assert!(err.is_not_found());
}

#[test]
fn a_bare_status_without_envelope_is_classified() {
    let err = read_envelope::<GetSession>(503, b"<html>busy</html>").unwrap_err();
    assert!(matches!(err, AgentKitError::Provider { status: 503, .. }));
    assert!(err.outcome_unknown());
    let err = read_envelope::<GetSession>(429, b"").unwrap_err();
    assert!(matches!(err, AgentKitError::Throttled { .. }));
    let err = read_envelope::<GetSession>(502, b"").unwrap_err();
    assert!(matches!(err, AgentKitError::Provider { status: 502, .. }));
    let err = read_envelope::<GetSession>(200, b"not json").unwrap_err();
    assert!(matches!(err, AgentKitError::InvalidResponse { .. }));
}

#[test]
fn a_result_is_read() {
    let body =
        br#"{"ResponseMetadata":{"RequestId":"r"},"Result":{"SessionId":"s-1","Status":"Ready"}}"#;
    let s: Session = read_envelope::<GetSession>(200, body).unwrap();
    assert_eq!(s.session_id.as_deref(), Some("s-1"));
}

#[test]
fn debug_shows_no_secret() {
    let config = AgentKitConfig {
        endpoint: "http://127.0.0.1:9".into(),
        regions: vec!["cn-beijing".into()],
        credentials: crate::agentkit::CredentialsSource::Static(Credentials::new(
            "AK", "SECRET", None,
        )),
        request_timeout: Duration::from_secs(1),
    };
    let c = AgentKitClient::new(&config, Credentials::new("AK", "SECRET", None)).unwrap();
    assert!(!format!("{c:?}").contains("SECRET"));
    assert_eq!(c.host, "127.0.0.1:9");
}
