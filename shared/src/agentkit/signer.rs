//! The Volcengine HMAC-SHA256 request signer (service `agentkit`); the simulator verifies with
//! the same pieces (`snapwake_sim::signature`). As the Python SDK's `volcengine.auth.SignerV4`:
//! a canonical request over method, path, sorted query, signed headers (`content-type`, `host`, every `x-*`) and the body's
//! SHA-256; scope `date/region/agentkit/request`; a signing key from an HMAC chain keyed first
//! with the raw secret (not `"AWS4"+secret`). Test vectors: `scripts/signer_vector.py`.

use hmac::{Hmac, KeyInit, Mac};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use sha2::{Digest, Sha256};
use std::fmt;
use time::OffsetDateTime;

pub const SERVICE: &str = "agentkit";
pub const ALGORITHM: &str = "HMAC-SHA256";

/// All but RFC 3986's unreserved characters are encoded (Python's `quote(s, safe='-_.~')`).
const QUERY_ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// An access key pair, optionally with an STS token. `Debug` hides the secret and the token.
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

/// Headers a signed request carries besides `Host`, `Content-Type`; `Debug` hides token, signature.
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
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

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

/// The canonical request over exactly the signed `(lower-case name, value)` headers, any order.
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

#[cfg(test)]
mod tests;
