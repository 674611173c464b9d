//! A recording Amazon EventBridge (`PutEvents`, the JSON 1.1 protocol) over HTTP, strict the
//! way the real one is: it checks the target and content type, recomputes each request's
//! SigV4 signature with the test credentials and refuses a wrong one (403
//! `InvalidSignatureException`), validates the entries (1–10, `Detail` a JSON object), and
//! records every delivery, accepted or not. It can fail the next calls the ways EventBridge
//! does: a 500, a 200 with the entry failed (`FailedEntryCount`), or an answer too slow to wait
//! for.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{json, Value};
use snapwake::events::eventbridge::EventBridge;

use crate::sigv4::{lock, refuse, refused, serve_double, signing_config, SigningKey};

/// The credentials publishers sign with, and the double verifies with.
pub const BUS_ACCESS_KEY: &str = "AKIDEVENTSTEST";
pub const BUS_SECRET_KEY: &str = "events-test-secret-do-not-log";
pub const BUS_REGION: &str = "eu-west-1";
const BUS_KEY: SigningKey = SigningKey {
    access_key: BUS_ACCESS_KEY,
    secret_key: BUS_SECRET_KEY,
    region: BUS_REGION,
    service: "events",
};
/// The bus the publishers name.
pub const BUS_NAME: &str = "snapwake-test-bus";

/// One `PutEvents` entry as it arrived.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub detail_type: String,
    pub detail: Value,
    pub source: String,
    pub bus: String,
    /// The whole request body, to search for what must never be in it.
    pub body: String,
    /// Whether the double answered it as published.
    pub accepted: bool,
    /// When it arrived (epoch ms).
    pub received_ms: u64,
}

/// How the next calls fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusFault {
    /// 500 `InternalException`.
    ServerError,
    /// 200 with `FailedEntryCount: 1` (`ThrottlingException` on the entry).
    FailedEntry,
    /// No answer for 5 s (the publisher gives up first).
    Slow,
}

#[derive(Default)]
struct Shared {
    deliveries: Mutex<Vec<Delivery>>,
    faults: Mutex<Vec<BusFault>>,
    bad_signatures: AtomicU32,
}

pub struct EventBusDouble {
    pub endpoint: String,
    shared: Arc<Shared>,
}

impl EventBusDouble {
    pub async fn start() -> EventBusDouble {
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .route("/", post(put_events))
            .with_state(shared.clone());
        EventBusDouble {
            endpoint: serve_double(app).await,
            shared,
        }
    }

    /// snapwake's EventBridge publisher, pointed here, signing with the test credentials.
    pub fn publisher(&self) -> EventBridge {
        self.publisher_signing_with(BUS_SECRET_KEY)
    }

    /// A publisher pointed here that signs with `secret` (the double refuses any but
    /// [`BUS_SECRET_KEY`]).
    pub fn publisher_signing_with(&self, secret: &str) -> EventBridge {
        let config = signing_config(&BUS_KEY, secret);
        EventBridge::with_endpoint(&config, BUS_NAME, Some(self.endpoint.clone()))
            .expect("a publisher")
    }

    /// Fail the next calls, one fault each, in order.
    pub fn fail_next(&self, faults: &[BusFault]) {
        lock(&self.shared.faults).extend_from_slice(faults);
    }

    /// Fail nothing from now on.
    pub fn clear_faults(&self) {
        lock(&self.shared.faults).clear();
    }

    /// Every entry that arrived, in order.
    pub fn deliveries(&self) -> Vec<Delivery> {
        lock(&self.shared.deliveries).clone()
    }

    /// The entries answered as published.
    pub fn published(&self) -> Vec<Delivery> {
        self.deliveries()
            .into_iter()
            .filter(|d| d.accepted)
            .collect()
    }

    /// Requests refused for their signature.
    pub fn bad_signatures(&self) -> u32 {
        self.shared.bad_signatures.load(Ordering::SeqCst)
    }
}

async fn put_events(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let call = (
        "AWSEvents.PutEvents",
        "application/x-amz-json-1.1",
        &BUS_KEY,
    );
    if let Some(refusal) = refused(call, &headers, &body, &shared.bad_signatures) {
        return refusal;
    }
    let text = String::from_utf8_lossy(&body).to_string();
    let request: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(_) => return refuse(StatusCode::BAD_REQUEST, "SerializationException", "body"),
    };
    let Some(entries) = request["Entries"]
        .as_array()
        .filter(|e| (1..=10).contains(&e.len()))
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "ValidationException",
            "Entries: 1 to 10",
        );
    };
    let mut parsed = Vec::new();
    for entry in entries {
        let detail = entry["Detail"]
            .as_str()
            .and_then(|d| serde_json::from_str::<Value>(d).ok())
            .filter(Value::is_object);
        let (Some(detail), Some(detail_type), Some(source)) = (
            detail,
            entry["DetailType"].as_str(),
            entry["Source"].as_str(),
        ) else {
            return refuse(StatusCode::BAD_REQUEST, "ValidationException", "an entry");
        };
        parsed.push(Delivery {
            detail_type: detail_type.to_string(),
            detail,
            source: source.to_string(),
            bus: entry["EventBusName"]
                .as_str()
                .unwrap_or("default")
                .to_string(),
            body: text.clone(),
            accepted: false,
            received_ms: snapwake::ambient::now_ms(),
        });
    }
    let fault = {
        let mut faults = lock(&shared.faults);
        (!faults.is_empty()).then(|| faults.remove(0))
    };
    let accepted = fault.is_none();
    lock(&shared.deliveries).extend(parsed.into_iter().map(|d| Delivery { accepted, ..d }));
    match fault {
        None => (
            StatusCode::OK,
            json!({
                "FailedEntryCount": 0,
                "Entries": entries.iter().map(|_| json!({"EventId": uuid::Uuid::new_v4().to_string()})).collect::<Vec<_>>(),
            })
            .to_string(),
        ),
        Some(BusFault::ServerError) => {
            refuse(StatusCode::INTERNAL_SERVER_ERROR, "InternalException", "try again")
        }
        Some(BusFault::FailedEntry) => (
            StatusCode::OK,
            json!({"FailedEntryCount": entries.len(), "Entries": entries.iter().map(|_| json!({
                "ErrorCode": "ThrottlingException", "ErrorMessage": "Rate exceeded"
            })).collect::<Vec<_>>()})
            .to_string(),
        ),
        Some(BusFault::Slow) => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            refuse(StatusCode::INTERNAL_SERVER_ERROR, "InternalException", "too late")
        }
    }
}
