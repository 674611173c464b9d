//! The `/_sim/` control surface: the operations of [`SimControl`] as unsigned JSON endpoints
//! (documented with examples in the crate docs, `lib.rs`). Loopback only.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{json, Value};

use super::SimControl;
use crate::clock::{format_ts, parse_ts};
use crate::error::SimError;
use crate::faults::Fault;
use crate::state::{SeedSession, SeedSnapshot, SeedTool};

pub(crate) fn routes() -> Router<SimControl> {
    Router::new()
        .route("/_sim/clock", get(clock))
        .route("/_sim/clock/advance", post(advance))
        .route("/_sim/clock/set", post(set_clock))
        .route("/_sim/tools", post(seed_tool))
        .route("/_sim/tools/{id}", get(peek_tool))
        .route("/_sim/sessions", post(seed_session))
        .route("/_sim/sessions/{id}", get(peek_session))
        .route("/_sim/sessions/{id}/status", post(set_session_status))
        .route("/_sim/snapshots", post(seed_snapshots))
        .route("/_sim/snapshots/{id}", get(peek_snapshot))
        .route("/_sim/settings", get(settings).post(set_settings))
        .route(
            "/_sim/faults",
            get(faults).post(inject).delete(clear_faults),
        )
        .route("/_sim/counters", get(counters))
        .route("/_sim/counters/reset", post(reset_counters))
}

/// A control error as `{"error": {"code", "message"}}`.
struct ControlError(SimError);

impl From<SimError> for ControlError {
    fn from(e: SimError) -> Self {
        ControlError(e)
    }
}

impl IntoResponse for ControlError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.0.code, "message": self.0.message}});
        (self.0.http_status(), Json(body)).into_response()
    }
}

type Answer = Result<Json<Value>, ControlError>;

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ControlError> {
    serde_json::from_slice(body)
        .map_err(|e| ControlError(SimError::invalid(format!("malformed control body: {e}"))))
}

fn now_json(c: &SimControl) -> Json<Value> {
    Json(json!({"now": format_ts(c.now())}))
}

async fn clock(State(c): State<SimControl>) -> Json<Value> {
    now_json(&c)
}

#[derive(Deserialize)]
struct Advance {
    seconds: f64,
}

async fn advance(State(c): State<SimControl>, body: Bytes) -> Answer {
    let a: Advance = parse(&body)?;
    let by = Duration::try_from_secs_f64(a.seconds)
        .map_err(|_| SimError::invalid("seconds must be a non-negative number"))?;
    c.advance(by);
    Ok(now_json(&c))
}

#[derive(Deserialize)]
struct SetClock {
    now: String,
}

async fn set_clock(State(c): State<SimControl>, body: Bytes) -> Answer {
    let s: SetClock = parse(&body)?;
    let t = parse_ts(&s.now).ok_or_else(|| SimError::invalid("now must be RFC 3339"))?;
    c.set_now(t);
    Ok(now_json(&c))
}

#[derive(Deserialize)]
struct SeedToolReq {
    #[serde(default)]
    region: Option<String>,
    #[serde(flatten)]
    tool: SeedTool,
}

async fn seed_tool(State(c): State<SimControl>, body: Bytes) -> Answer {
    let r: SeedToolReq = parse(&body)?;
    let region = match r.region {
        Some(region) => region,
        None => c.regions().first().cloned().unwrap_or_default(),
    };
    let id = c.seed_tool(&region, r.tool)?;
    Ok(Json(json!({"tool_id": id})))
}

fn not_found(what: &str) -> ControlError {
    ControlError(SimError::not_found(format!("no such {what}")))
}

async fn peek_tool(State(c): State<SimControl>, Path(id): Path<String>) -> Answer {
    let (region, tool) = c.tool(&id).ok_or_else(|| not_found("Tool"))?;
    Ok(Json(json!({"region": region, "tool": tool})))
}

async fn seed_session(State(c): State<SimControl>, body: Bytes) -> Answer {
    let s: SeedSession = parse(&body)?;
    let id = c.seed_session(s)?;
    Ok(Json(json!({"session_id": id})))
}

async fn peek_session(State(c): State<SimControl>, Path(id): Path<String>) -> Answer {
    let s = c.session(&id).ok_or_else(|| not_found("session"))?;
    Ok(Json(json!(s)))
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    Many(Vec<SeedSnapshot>),
    One(Box<SeedSnapshot>),
}

async fn seed_snapshots(State(c): State<SimControl>, body: Bytes) -> Answer {
    match parse::<OneOrMany>(&body)? {
        OneOrMany::One(s) => Ok(Json(json!({"snapshot_id": c.seed_snapshot(*s)?}))),
        OneOrMany::Many(all) => Ok(Json(json!({"snapshot_ids": c.seed_snapshots(all)?}))),
    }
}

async fn peek_snapshot(State(c): State<SimControl>, Path(id): Path<String>) -> Answer {
    let s = c.snapshot(&id).ok_or_else(|| not_found("snapshot"))?;
    Ok(Json(json!(s)))
}

#[derive(Serialize, Deserialize, Default)]
#[serde(default)]
struct Settings {
    session_ready_delay_ms: Option<u64>,
    tool_ready_delay_ms: Option<u64>,
    snapshot_ready_delay_ms: Option<u64>,
    snapshot_outcome: Option<String>,
    expiry_snapshot_delay_ms: Option<u64>,
    expiry_snapshot_hidden_ms: Option<u64>,
    expiry_snapshot_outcome: Option<String>,
    stuck_sessions: Option<u32>,
    /// Absent = unchanged; `null` = the Tool writes' limit off.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    tool_write_limit: Option<Option<u32>>,
    /// Per action (or `ToolWrites`): requests per second, `null` = that limit off; actions
    /// not named are unchanged.
    rate_limits: Option<BTreeMap<String, Option<u32>>>,
}

/// A present field, even `null`, is `Some(..)`; an absent one stays `None` (the default).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn settings_json(c: &SimControl) -> Json<Value> {
    let (s, t, l) = c.settings();
    let (expiry_delay, expiry_hidden, expiry_outcome, stuck) = c.agentkit_time();
    Json(json!({
        "expiry_snapshot_delay_ms": expiry_delay.as_millis() as u64,
        "expiry_snapshot_hidden_ms": expiry_hidden.as_millis() as u64,
        "expiry_snapshot_outcome": expiry_outcome,
        "stuck_sessions": stuck,
        "session_ready_delay_ms": s.as_millis() as u64,
        "tool_ready_delay_ms": t.as_millis() as u64,
        "snapshot_ready_delay_ms": c.snapshot_ready_delay().as_millis() as u64,
        "snapshot_outcome": c.snapshot_outcome(),
        "tool_write_limit": l,
        "rate_limits": c.rate_limits(),
    }))
}

async fn settings(State(c): State<SimControl>) -> Json<Value> {
    settings_json(&c)
}

async fn set_settings(State(c): State<SimControl>, body: Bytes) -> Answer {
    let s: Settings = parse(&body)?;
    // A typo would silently limit nothing: refuse it before changing anything.
    for action in s.rate_limits.iter().flat_map(|l| l.keys()) {
        if !crate::limits::is_limit(action) {
            return Err(SimError::invalid(format!("no action named {action}")).into());
        }
    }
    if let Some(ms) = s.session_ready_delay_ms {
        c.set_session_ready_delay(Duration::from_millis(ms));
    }
    if let Some(ms) = s.tool_ready_delay_ms {
        c.set_tool_ready_delay(Duration::from_millis(ms));
    }
    if let Some(ms) = s.snapshot_ready_delay_ms {
        c.set_snapshot_ready_delay(Duration::from_millis(ms));
    }
    if let Some(status) = s.snapshot_outcome {
        c.set_snapshot_outcome(&status);
    }
    if let Some(l) = s.tool_write_limit {
        c.set_tool_write_limit(l);
    }
    for (action, per_second) in s.rate_limits.unwrap_or_default() {
        c.set_rate_limit(&action, per_second);
    }
    if let Some(ms) = s.expiry_snapshot_delay_ms {
        c.set_expiry_snapshot_delay(Duration::from_millis(ms));
    }
    if let Some(ms) = s.expiry_snapshot_hidden_ms {
        c.set_expiry_snapshot_hidden(Duration::from_millis(ms));
    }
    if let Some(status) = s.expiry_snapshot_outcome {
        c.set_expiry_snapshot_outcome(&status);
    }
    if let Some(n) = s.stuck_sessions {
        c.set_stuck_sessions(n);
    }
    Ok(settings_json(&c))
}

#[derive(Deserialize)]
struct SessionStatus {
    /// Any string; `null` hands the session back to its lifecycle.
    status: Option<String>,
}

async fn set_session_status(
    State(c): State<SimControl>,
    Path(id): Path<String>,
    body: Bytes,
) -> Answer {
    let s: SessionStatus = parse(&body)?;
    c.set_session_status(&id, s.status.as_deref())?;
    Ok(Json(json!({"session_id": id, "status": s.status})))
}

async fn faults(State(c): State<SimControl>) -> Json<Value> {
    Json(json!(c.faults()))
}

async fn inject(State(c): State<SimControl>, body: Bytes) -> Answer {
    let f: Fault = parse(&body)?;
    c.inject(f)?;
    Ok(Json(json!({"faults": c.faults().len()})))
}

async fn clear_faults(State(c): State<SimControl>) -> Json<Value> {
    c.clear_faults();
    Json(json!({"faults": 0}))
}

async fn counters(State(c): State<SimControl>) -> Json<Value> {
    Json(json!(c.counters()))
}

async fn reset_counters(State(c): State<SimControl>) -> StatusCode {
    c.reset_counters();
    StatusCode::NO_CONTENT
}
