//! Unit tests of `signer`: the Python SDK test vectors, sign-then-verify with tampering,
//! the secret hidden from `Debug`, and RFC 3986 query encoding.

use super::*;
use time::macros::datetime;

/// Computed with `volcengine` 1.0.229's `SignerV4.sign_only` (scripts/signer_vector.py).
#[test]
fn matches_the_python_sdk_signer() {
    let creds = Credentials::new("AKLTexampleAccessKey", "exampleSecretKey==", None);
    let body = br#"{"MaxResults":10,"ToolId":"t-abc123"}"#;
    let signed = sign(
        &creds,
        "cn-beijing",
        datetime!(2026-11-30 08:15:42 UTC),
        &Request {
            host: "open.volcengineapi.com",
            query: &[("Action", "ListSessions"), ("Version", "2025-10-30")],
            content_type: "application/json",
            body,
        },
    );
    assert_eq!(signed.x_date, "20261130T081542Z");
    assert_eq!(
        signed.x_content_sha256,
        "2a042b8d0916dcbf22bb6ddd387f23ec1e86623afeb1f75460c45b7ce59592c3"
    );
    assert_eq!(
        signed.authorization,
        "HMAC-SHA256 Credential=AKLTexampleAccessKey/20261130/cn-beijing/agentkit/request, \
         SignedHeaders=content-type;host;x-content-sha256;x-date, \
         Signature=bb9a07db18900feaed829629fa2dbdecc5a94bc7343b0eadb7a88cda55a23e7c"
    );
}

#[test]
fn matches_the_python_sdk_signer_with_a_session_token() {
    let creds = Credentials::new(
        "AKLTexampleAccessKey",
        "exampleSecretKey==",
        Some("STS-token-xyz".into()),
    );
    let body = br#"{"CreateNewInstance":false,"SnapshotId":"snap-1","ToolId":"t-1","Ttl":28800}"#;
    let signed = sign(
        &creds,
        "cn-shanghai",
        datetime!(2026-01-02 03:04:05 UTC),
        &Request {
            host: "open.volcengineapi.com",
            query: &[
                ("Version", "2025-10-30"),
                ("Action", "ResumeSessionFromSnapshot"),
            ],
            content_type: "application/json",
            body,
        },
    );
    assert_eq!(signed.x_security_token.as_deref(), Some("STS-token-xyz"));
    assert_eq!(
        signed.authorization,
        "HMAC-SHA256 Credential=AKLTexampleAccessKey/20260102/cn-shanghai/agentkit/request, \
         SignedHeaders=content-type;host;x-content-sha256;x-date;x-security-token, \
         Signature=b28e7a36ca2c26081ee28f2b71d6d65ab945083481a514f383bf882df73ad601"
    );
}

#[test]
fn credentials_debug_hides_the_secret() {
    let c = Credentials::new("AK", "very-secret", Some("tok-secret".into()));
    let shown = format!("{c:?}");
    assert!(!shown.contains("very-secret") && !shown.contains("tok-secret"));
    assert!(shown.contains("AK"));
}

#[test]
fn query_encoding_is_rfc3986() {
    assert_eq!(
        canonical_query(&[("b", "x y/z"), ("a", "~_.-")]),
        "a=~_.-&b=x%20y%2Fz"
    );
}
