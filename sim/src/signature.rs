//! The simulator's check of a request's signature: the `Authorization` header parsed, the signed
//! headers and the body's hash checked, and the signature recomputed with snapwake's own signing
//! pieces (`snapwake::agentkit::signer`), compared in constant time.

use std::fmt;

use snapwake::agentkit::signer::{canonical_request, sha256_hex, signature, ALGORITHM, SERVICE};
use snapwake::agentkit::Credentials;

/// A parsed `Authorization` header. `Debug` hides the signature.
#[derive(Clone, PartialEq, Eq)]
pub struct Authorization {
    pub access_key_id: String,
    pub date: String,
    pub region: String,
    pub service: String,
    pub signed_headers: Vec<String>,
    pub signature: String,
}

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorization")
            .field("access_key_id", &self.access_key_id)
            .field("date", &self.date)
            .field("region", &self.region)
            .field("service", &self.service)
            .field("signed_headers", &self.signed_headers)
            .field("signature", &"<redacted>")
            .finish()
    }
}

/// Parse `HMAC-SHA256 Credential=AK/date/region/service/request, SignedHeaders=a;b, Signature=hex`.
pub fn parse_authorization(value: &str) -> Option<Authorization> {
    let rest = value.strip_prefix(ALGORITHM)?.trim_start();
    let (mut credential, mut signed, mut sig) = (None, None, None);
    for part in rest.split(',') {
        let (k, v) = part.trim().split_once('=')?;
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => sig = Some(v),
            _ => return None,
        }
    }
    let mut c = credential?.split('/');
    let (ak, date, region, service, terminal) =
        (c.next()?, c.next()?, c.next()?, c.next()?, c.next()?);
    if c.next().is_some() || terminal != "request" || ak.is_empty() {
        return None;
    }
    Some(Authorization {
        access_key_id: ak.to_string(),
        date: date.to_string(),
        region: region.to_string(),
        service: service.to_string(),
        signed_headers: signed?.split(';').map(str::to_string).collect(),
        signature: sig?.to_string(),
    })
}

/// Why a request's signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing or malformed Authorization header")]
    Malformed,
    #[error("unknown access key")]
    UnknownAccessKey,
    #[error("a required header is not signed: {0}")]
    UnsignedHeader(&'static str),
    #[error("a signed header is missing: {0}")]
    MissingHeader(String),
    #[error("the body does not match X-Content-Sha256")]
    BodyHashMismatch,
    #[error("the credential scope does not match X-Date or the service")]
    ScopeMismatch,
    #[error("the signature does not match")]
    SignatureMismatch,
}

/// Verify a received POST request. `header` looks a header up by lower-case name.
pub fn verify<'h>(
    credentials: &Credentials,
    authorization: &str,
    path: &str,
    query: &[(&str, &str)],
    header: impl Fn(&str) -> Option<&'h str>,
    body: &[u8],
) -> Result<Authorization, VerifyError> {
    let auth = parse_authorization(authorization).ok_or(VerifyError::Malformed)?;
    if auth.access_key_id != credentials.access_key_id {
        return Err(VerifyError::UnknownAccessKey);
    }
    for required in ["host", "x-date", "x-content-sha256"] {
        if !auth.signed_headers.iter().any(|h| h == required) {
            return Err(VerifyError::UnsignedHeader(required));
        }
    }
    let mut headers = Vec::with_capacity(auth.signed_headers.len());
    for name in &auth.signed_headers {
        let value = header(name).ok_or_else(|| VerifyError::MissingHeader(name.clone()))?;
        headers.push((name.clone(), value.to_string()));
    }
    let body_sha256 = sha256_hex(body);
    if header("x-content-sha256") != Some(body_sha256.as_str()) {
        return Err(VerifyError::BodyHashMismatch);
    }
    let x_date = header("x-date").unwrap_or_default();
    if auth.service != SERVICE || x_date.get(..8) != Some(auth.date.as_str()) {
        return Err(VerifyError::ScopeMismatch);
    }
    let canonical = canonical_request("POST", path, query, &headers, &body_sha256);
    let expected = signature(
        credentials.secret_access_key(),
        x_date,
        &auth.region,
        &canonical,
    );
    // Constant time, so the simulator is no oracle for forging signatures byte by byte.
    let same: bool =
        subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), auth.signature.as_bytes()).into();
    if same {
        Ok(auth)
    } else {
        Err(VerifyError::SignatureMismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use snapwake::agentkit::signer::{sign, Request, SignedHeaders};
    use time::macros::datetime;

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
}
