//! A recording Amazon EventBridge (`PutEvents`, the JSON 1.1 protocol) over HTTP, strict the
//! way the real one is: it checks the target and content type, recomputes each request's
//! SigV4 signature with the test credentials and refuses a wrong one (403
//! `InvalidSignatureException`), validates the entries (1–10, `Detail` a JSON object), and
//! records every delivery, accepted or not. It can fail the next calls the ways EventBridge
//! does: a 500, a 200 with the entry failed (`FailedEntryCount`), or an answer too slow to wait
//! for.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aws_credential_types::provider::SharedCredentialsProvider;
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{json, Value};
use snapwake::events::eventbridge::EventBridge;

/// The credentials publishers sign with, and the double verifies with.
pub const BUS_ACCESS_KEY: &str = "AKIDEVENTSTEST";
pub const BUS_SECRET_KEY: &str = "events-test-secret-do-not-log";
pub const BUS_REGION: &str = "eu-west-1";
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
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the EventBridge double");
        let addr = listener.local_addr().expect("its address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        EventBusDouble {
            endpoint: format!("http://{addr}/"),
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
        let config = aws_config::SdkConfig::builder()
            .region(aws_config::Region::new(BUS_REGION))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                BUS_ACCESS_KEY,
                secret,
                None,
                None,
                "event-bus-double",
            )))
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn refuse(status: StatusCode, kind: &str, message: &str) -> (StatusCode, String) {
    (
        status,
        json!({"__type": kind, "message": message}).to_string(),
    )
}

async fn put_events(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("x-amz-target") != Some("AWSEvents.PutEvents") {
        return refuse(
            StatusCode::BAD_REQUEST,
            "UnknownOperationException",
            "target",
        );
    }
    if header("content-type") != Some("application/x-amz-json-1.1") {
        return refuse(
            StatusCode::BAD_REQUEST,
            "SerializationException",
            "content-type",
        );
    }
    if !signature_holds(&headers, &body) {
        shared.bad_signatures.fetch_add(1, Ordering::SeqCst);
        return refuse(
            StatusCode::FORBIDDEN,
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided.",
        );
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

/// Whether the request's `Authorization` is the SigV4 signature of what arrived, with the
/// test credentials, at the time its `X-Amz-Date` says.
fn signature_holds(headers: &HeaderMap, body: &[u8]) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(given), Some(date), Some(host)) = (
        header("authorization"),
        header("x-amz-date"),
        header("host"),
    ) else {
        return false;
    };
    let Some(time) = amz_date(date) else {
        return false;
    };
    let identity: Identity =
        Credentials::new(BUS_ACCESS_KEY, BUS_SECRET_KEY, None, None, "double").into();
    let Ok(params) = v4::SigningParams::builder()
        .identity(&identity)
        .region(BUS_REGION)
        .name("events")
        .time(time)
        .settings(SigningSettings::default())
        .build()
    else {
        return false;
    };
    let signed = [
        ("host", host),
        ("content-type", header("content-type").unwrap_or_default()),
        ("x-amz-target", header("x-amz-target").unwrap_or_default()),
    ];
    let uri = format!("http://{host}/");
    let Ok(signable) = SignableRequest::new(
        "POST",
        &uri,
        signed.iter().copied(),
        SignableBody::Bytes(body),
    ) else {
        return false;
    };
    let Ok(output) = sign(signable, &params.into()) else {
        return false;
    };
    let (instructions, _) = output.into_parts();
    let mut expected = http::Request::builder()
        .method("POST")
        .uri(&uri)
        .body(())
        .expect("a request");
    instructions.apply_to_request_http1x(&mut expected);
    expected
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        == Some(given)
}

/// `20261204T144343Z` as a time.
fn amz_date(text: &str) -> Option<SystemTime> {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let at = time::PrimitiveDateTime::parse(text, &format).ok()?;
    Some(at.assume_utc().into())
}
