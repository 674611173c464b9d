//! The Volcengine HMAC-SHA256 request signer (service `agentkit`), and its verifier for the
//! simulator.
//!
//! It follows the signer of the official Python SDK (`volcengine.auth.SignerV4`): a canonical
//! request over the method, path, sorted query, the signed headers (`content-type`, `host` and
//! every `x-*` header) and the body's SHA-256; a scope `date/region/agentkit/request`; and a
//! signing key derived by an HMAC chain keyed first with the raw secret (not `"AWS4"+secret`).
//! The test vectors at the bottom were computed with that SDK (`scripts/signer_vector.py`).

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

pub const SERVICE: &str = "agentkit";
pub const ALGORITHM: &str = "HMAC-SHA256";

/// Everything but RFC 3986's unreserved characters is percent-encoded (Python's
/// `quote(s, safe='-_.~')`).
const QUERY_ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// An access key pair, optionally with an STS session token. `Debug` never shows the secret
/// or the token.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
}

impl Credentials {
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        session_token: Option<String>,
    ) -> Self {
        Credentials {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: session_token.filter(|t| !t.is_empty()),
        }
    }

    pub fn secret_access_key(&self) -> &str {
        &self.secret_access_key
    }

    pub fn session_token(&self) -> Option<&str> {
        self.session_token.as_deref()
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The headers a signed request must carry, besides `Host` and `Content-Type`. `Debug` hides
/// the session token and the signature.
#[derive(Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    pub x_date: String,
    pub x_content_sha256: String,
    pub x_security_token: Option<String>,
    pub authorization: String,
}

impl fmt::Debug for SignedHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignedHeaders")
            .field("x_date", &self.x_date)
            .field("x_content_sha256", &self.x_content_sha256)
            .field(
                "x_security_token",
                &self.x_security_token.as_ref().map(|_| "<redacted>"),
            )
            .field("authorization", &"<redacted>")
            .finish()
    }
}

/// `YYYYMMDDTHHMMSSZ` in UTC.
pub fn format_x_date(at: OffsetDateTime) -> String {
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    at.to_offset(time::UtcOffset::UTC)
        .format(&fmt)
        .unwrap_or_default()
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// `key=value` pairs sorted by key (then value), each percent-encoded, joined by `&`.
pub fn canonical_query(query: &[(&str, &str)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| {
            (
                utf8_percent_encode(k, QUERY_ENCODE).to_string(),
                utf8_percent_encode(v, QUERY_ENCODE).to_string(),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Whether a header takes part in the signature.
pub fn is_signed_header(lower_name: &str) -> bool {
    matches!(lower_name, "content-type" | "content-md5" | "host") || lower_name.starts_with("x-")
}

/// The canonical request. `headers` are `(lower-case name, value)` of exactly the signed
/// headers, in any order.
pub fn canonical_request(
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(String, String)],
    body_sha256: &str,
) -> String {
    let mut headers: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    headers.sort();
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    let path = if path.is_empty() { "/" } else { path };
    format!(
        "{method}\n{path}\n{}\n{canonical_headers}\n{}\n{body_sha256}",
        canonical_query(query),
        signed.join(";")
    )
}

/// The hex signature of a canonical request.
pub fn signature(secret: &str, x_date: &str, region: &str, canonical_request: &str) -> String {
    let date = x_date.get(..8).unwrap_or(x_date);
    let scope = format!("{date}/{region}/{SERVICE}/request");
    let string_to_sign = format!(
        "{ALGORITHM}\n{x_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let k_date = hmac_sha256(secret.as_bytes(), date.as_bytes());
    let k_region = hmac_sha256(&k_date, region.as_bytes());
    let k_service = hmac_sha256(&k_region, SERVICE.as_bytes());
    let k_signing = hmac_sha256(&k_service, b"request");
    hex::encode(hmac_sha256(&k_signing, string_to_sign.as_bytes()))
}

/// What to sign: a POST of `body` to `host` `/` with `query`.
pub struct Request<'a> {
    pub host: &'a str,
    pub query: &'a [(&'a str, &'a str)],
    pub content_type: &'a str,
    pub body: &'a [u8],
}

/// Sign a POST request at `at` in `region`.
pub fn sign(
    credentials: &Credentials,
    region: &str,
    at: OffsetDateTime,
    req: &Request<'_>,
) -> SignedHeaders {
    let x_date = format_x_date(at);
    let body_sha256 = sha256_hex(req.body);
    let mut headers = vec![
        ("content-type".to_string(), req.content_type.to_string()),
        ("host".to_string(), req.host.to_string()),
        ("x-content-sha256".to_string(), body_sha256.clone()),
        ("x-date".to_string(), x_date.clone()),
    ];
    if let Some(token) = credentials.session_token() {
        headers.push(("x-security-token".to_string(), token.to_string()));
    }
    let canonical = canonical_request("POST", "/", req.query, &headers, &body_sha256);
    let sig = signature(credentials.secret_access_key(), &x_date, region, &canonical);
    let mut names: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    let authorization = format!(
        "{ALGORITHM} Credential={}/{}/{region}/{SERVICE}/request, SignedHeaders={}, Signature={sig}",
        credentials.access_key_id,
        &x_date[..8],
        names.join(";")
    );
    SignedHeaders {
        x_date,
        x_content_sha256: body_sha256,
        x_security_token: credentials.session_token().map(str::to_string),
        authorization,
    }
}

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
mod tests;
