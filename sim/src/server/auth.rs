//! Request verification: the Volcengine signature, `X-Date` freshness against wall-clock
//! time, and the configured session token. Answers the credential-scope region.

use axum::http::{header, HeaderMap};
use time::OffsetDateTime;

use crate::error::SimError;
use crate::shared::Shared;
use crate::signature::{self, VerifyError};

/// How far `X-Date` may be from wall-clock time.
const MAX_SKEW: time::Duration = time::Duration::minutes(15);

pub(super) fn parse_x_date(s: &str) -> Option<OffsetDateTime> {
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    time::PrimitiveDateTime::parse(s, &fmt)
        .ok()
        .map(|t| t.assume_utc())
}

/// Verify the request's signature; answers the credential-scope region.
pub(super) fn authenticate(
    sh: &Shared,
    headers: &HeaderMap,
    query: &[(String, String)],
    body: &[u8],
) -> Result<String, SimError> {
    let Some(authz) = headers.get(header::AUTHORIZATION) else {
        return Err(SimError::unauthorized(
            "MissingAuthenticationToken",
            "the request has no Authorization header",
        ));
    };
    let authz = authz
        .to_str()
        .map_err(|_| SimError::unauthorized("InvalidAuthorization", "unreadable Authorization"))?;
    let pairs: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let lookup = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    // Read once: a rotation during this request applies to the next one.
    let credentials = sh.credentials();
    let auth = signature::verify(&credentials, authz, "/", &pairs, lookup, body).map_err(|e| {
        match e {
            VerifyError::Malformed => {
                SimError::unauthorized("InvalidAuthorization", "malformed Authorization header")
            }
            VerifyError::UnknownAccessKey => {
                SimError::unauthorized("InvalidAccessKey", "unknown access key")
            }
            // The reason is safe to show: it names headers, never values or signatures.
            other => SimError::signature_mismatch(other.to_string()),
        }
    })?;
    let signed_at = lookup("x-date").and_then(parse_x_date);
    let fresh = signed_at.is_some_and(|t| (OffsetDateTime::now_utc() - t).abs() <= MAX_SKEW);
    if !fresh {
        return Err(SimError::unauthorized(
            "SignatureExpired",
            "X-Date is more than 15 minutes from the server time",
        ));
    }
    if let Some(token) = credentials.session_token() {
        let signed = auth.signed_headers.iter().any(|h| h == "x-security-token");
        let same = lookup("x-security-token").is_some_and(|got| {
            subtle::ConstantTimeEq::ct_eq(got.as_bytes(), token.as_bytes()).into()
        });
        if !(signed && same) {
            return Err(SimError::unauthorized(
                "InvalidSecurityToken",
                "X-Security-Token is missing, unsigned or wrong",
            ));
        }
    }
    Ok(auth.region)
}
