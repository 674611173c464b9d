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

fn signed_request(creds: &Credentials, body: &[u8]) -> (SignedHeaders, Vec<(String, String)>) {
    let query = [("Action", "GetTool"), ("Version", "2025-10-30")];
    let s = sign(
        creds,
        "cn-beijing",
        datetime!(2026-12-02 10:00:00 UTC),
        &Request {
            host: "127.0.0.1:9000",
            query: &query,
            content_type: "application/json",
            body,
        },
    );
    let headers = vec![
        ("host".into(), "127.0.0.1:9000".into()),
        ("content-type".into(), "application/json".into()),
        ("x-date".into(), s.x_date.clone()),
        ("x-content-sha256".into(), s.x_content_sha256.clone()),
    ];
    (s, headers)
}

fn lookup<'a>(headers: &'a [(String, String)]) -> impl Fn(&str) -> Option<&'a str> {
    move |name| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[test]
fn verify_accepts_what_sign_produced_and_rejects_tampering() {
    let creds = Credentials::new("AK", "SK", None);
    let body = br#"{"ToolId":"t-1"}"#;
    let query = [("Action", "GetTool"), ("Version", "2025-10-30")];
    let (s, headers) = signed_request(&creds, body);
    let ok = verify(
        &creds,
        &s.authorization,
        "/",
        &query,
        lookup(&headers),
        body,
    )
    .unwrap();
    assert_eq!(ok.region, "cn-beijing");

    let wrong_secret = Credentials::new("AK", "other", None);
    assert_eq!(
        verify(
            &wrong_secret,
            &s.authorization,
            "/",
            &query,
            lookup(&headers),
            body
        ),
        Err(VerifyError::SignatureMismatch)
    );
    assert_eq!(
        verify(
            &creds,
            &s.authorization,
            "/",
            &query,
            lookup(&headers),
            b"{}"
        ),
        Err(VerifyError::BodyHashMismatch)
    );
    let other_action = [("Action", "DeleteSession"), ("Version", "2025-10-30")];
    assert_eq!(
        verify(
            &creds,
            &s.authorization,
            "/",
            &other_action,
            lookup(&headers),
            body
        ),
        Err(VerifyError::SignatureMismatch)
    );
    let other_ak = Credentials::new("AK2", "SK", None);
    assert_eq!(
        verify(
            &other_ak,
            &s.authorization,
            "/",
            &query,
            lookup(&headers),
            body
        ),
        Err(VerifyError::UnknownAccessKey)
    );
    assert_eq!(
        verify(&creds, "Bearer x", "/", &query, lookup(&headers), body),
        Err(VerifyError::Malformed)
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
