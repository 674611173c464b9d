//! The action endpoint `POST /?Action=…&Version=…`: signature check, dispatch, throttle,
//! faults, counters and the response envelope.

use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use percent_encoding::percent_decode_str;
use serde_json::Value;
use time::OffsetDateTime;

use super::actions::{self, Ctx};
use super::error::SimError;
use super::{Shared, SimControl};
use snapwake::agentkit::envelope::{ApiError, Envelope, ResponseMetadata};
use snapwake::agentkit::signer::{self, VerifyError};
use snapwake::agentkit::types::API_VERSION;

/// How far `X-Date` may be from wall-clock time.
const MAX_SKEW: time::Duration = time::Duration::minutes(15);

pub(crate) fn routes() -> Router<SimControl> {
    Router::new().route("/", post(action))
}

/// Query pairs as received, percent-decoded (`+` as a space, as forms encode it).
fn parse_query(raw: Option<&str>) -> Vec<(String, String)> {
    let decode = |s: &str| {
        percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    raw.unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn parse_x_date(s: &str) -> Option<OffsetDateTime> {
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    time::PrimitiveDateTime::parse(s, &fmt)
        .ok()
        .map(|t| t.assume_utc())
}

/// Verify the request's signature; answers the credential-scope region.
fn authenticate(
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
    let auth = signer::verify(&sh.credentials, authz, "/", &pairs, lookup, body).map_err(|e| {
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
    if let Some(token) = sh.credentials.session_token() {
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

fn respond(mut meta: ResponseMetadata, outcome: Result<Value, SimError>) -> Response {
    match outcome {
        Ok(result) => Json(Envelope {
            response_metadata: meta,
            result: Some(result),
        })
        .into_response(),
        Err(e) if e.bare => {
            let mut resp = (e.http_status(), "Service Unavailable\n").into_response();
            if let Some(secs) = e.retry_after {
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            resp
        }
        Err(e) => {
            meta.error = Some(ApiError {
                code: e.code.clone(),
                message: e.message.clone(),
            });
            let body = Json(Envelope::<Value> {
                response_metadata: meta,
                result: None,
            });
            let mut resp = (e.http_status(), body).into_response();
            if let Some(secs) = e.retry_after {
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            resp
        }
    }
}

async fn action(
    State(control): State<SimControl>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Bytes,
) -> Response {
    let sh = &control.0;
    let query = parse_query(raw.as_deref());
    let first = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let (action_name, version) = (first("Action"), first("Version"));
    let mut meta = ResponseMetadata {
        request_id: uuid::Uuid::new_v4().to_string(),
        action: action_name.clone(),
        version: version.clone(),
        service: signer::SERVICE.into(),
        region: String::new(),
        error: None,
    };

    let region = match authenticate(sh, &headers, &query, &body) {
        Ok(region) => region,
        Err(e) => {
            sh.with(|i, _| i.counters.signature_failures += 1);
            tracing::info!(action = %action_name, code = %e.code, "sim: request refused (401)");
            return respond(meta, Err(e));
        }
    };
    meta.region = region.clone();

    let Some((name, is_tool_write)) = actions::lookup(&action_name) else {
        return respond(
            meta,
            Err(SimError::new(400, "InvalidAction", "unknown action")),
        );
    };
    let before_run = sh.with(|i, _| {
        i.counters.actions.entry(name.into()).or_default().received += 1;
        if version != API_VERSION {
            return Err(SimError::new(
                400,
                "InvalidVersion",
                format!("Version must be {API_VERSION}"),
            ));
        }
        if !sh.regions.contains(&region) {
            return Err(SimError::new(400, "InvalidRegion", "unknown region"));
        }
        if is_tool_write {
            i.throttle
                .admit(Instant::now())
                .map_err(SimError::throttled)?;
        }
        let v = i.faults.decide(name, &mut i.fault_rng);
        if v.error.is_some() {
            i.counters.faults_fired += 1;
        }
        Ok(v)
    });
    let verdict = match before_run {
        Ok(v) => v,
        Err(e) => {
            tracing::debug!(action = name, code = %e.code, "sim: refused before running");
            return respond(meta, Err(e));
        }
    };
    // An after-apply fault acts at once and answers late; any other latency comes first.
    let late = verdict.error.is_some() && verdict.after_apply;
    if verdict.latency_ms > 0 && !late {
        tokio::time::sleep(Duration::from_millis(verdict.latency_ms)).await;
    }
    let run = verdict.error.is_none() || verdict.after_apply;
    let outcome = if run {
        sh.with(|i, now| {
            let cx = Ctx {
                region: &region,
                now,
                tokens: &sh.tokens,
            };
            actions::run(name, &mut i.world, &cx, &body)
        })
    } else {
        Ok(Value::Null)
    };
    if verdict.latency_ms > 0 && late {
        tokio::time::sleep(Duration::from_millis(verdict.latency_ms)).await;
    }
    let outcome = match verdict.error {
        Some(e) => Err(e),
        None => outcome,
    };
    if outcome.is_ok() {
        sh.with(|i, _| {
            i.counters.actions.entry(name.into()).or_default().succeeded += 1;
        });
    }
    let status = match &outcome {
        Ok(_) => StatusCode::OK.as_u16(),
        Err(e) => e.status,
    };
    tracing::debug!(action = name, region = %region, status, "sim: answered");
    respond(meta, outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_is_percent_decoded() {
        assert_eq!(
            parse_query(Some("Action=List%20Tools&Version=2025-10-30&x")),
            vec![
                ("Action".to_string(), "List Tools".to_string()),
                ("Version".to_string(), "2025-10-30".to_string()),
                ("x".to_string(), String::new()),
            ]
        );
        assert!(parse_query(None).is_empty());
    }

    #[test]
    fn x_date_parses() {
        assert_eq!(
            parse_x_date("20261202T100000Z"),
            Some(time::macros::datetime!(2026-12-02 10:00:00 UTC))
        );
        assert_eq!(parse_x_date("2026-12-02"), None);
    }
}
