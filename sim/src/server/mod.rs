//! The action endpoint `POST /?Action=…&Version=…`: the order in which a request is checked
//! and run.
//!
//! This file owns that pipeline: query parsing, then the signature (`auth.rs`), the action,
//! version and region, the throttle, faults, the action itself and the counters; `envelope.rs`
//! renders the answer.

mod auth;
mod envelope;
#[cfg(test)]
mod tests;

use std::time::Duration;

use tokio::time::Instant;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use percent_encoding::percent_decode_str;
use serde_json::Value;

use super::actions::{self, Ctx};
use super::error::SimError;
use crate::control::SimControl;
use auth::authenticate;
use envelope::respond;
use snapwake::agentkit::answer::ResponseMetadata;
use snapwake::agentkit::signer;
use snapwake::agentkit::types::API_VERSION;

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

pub(crate) async fn action(
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

    let Some(name) = actions::lookup(&action_name) else {
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
        i.limiter
            .admit(name, Instant::now())
            .map_err(|after| SimError::throttled(crate::limits::limit_of(name), after))?;
        let request = format!(
            "{}?{}",
            String::from_utf8_lossy(&body),
            raw.as_deref().unwrap_or("")
        );
        let v = i.faults.decide(name, &request, &mut i.fault_rng);
        if v.error.is_some() {
            i.counters.faults_fired += 1;
        }
        if let Some(kind) = v.kind() {
            *i.counters.faults_by_kind.entry(kind.into()).or_default() += 1;
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
    // Answered now, carried out later: kept until it is due (`Shared::with` applies it).
    if let (Some(_), Some(after)) = (&verdict.error, verdict.apply_after_ms) {
        sh.with(|i, now| {
            i.late.push(crate::shared::Late {
                due: now + time::Duration::milliseconds(i64::try_from(after).unwrap_or(i64::MAX)),
                action: name,
                region: region.clone(),
                body: body.to_vec(),
            })
        });
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
