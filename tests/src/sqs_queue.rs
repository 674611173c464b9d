//! A recording Amazon SQS standard queue (`SendMessageBatch`, the JSON 1.0 protocol) over
//! HTTP, strict the way the real one is: it checks the target and content type, recomputes
//! each request's SigV4 signature with the test credentials and refuses a wrong one (403
//! `InvalidSignatureException`), validates the batch (the queue's URL, 1–10 entries with
//! distinct ids, a body, a `DelaySeconds` of 0 to 900 if any, and no `MessageGroupId` or
//! `MessageDeduplicationId`, which a standard queue refuses), and takes every message, a
//! repeat too. It can fail the next entries the way SQS does: in a 200, each failed entry with
//! its code and whether the sender is to blame.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::{json, Value};
use snapwake::fanout::sqs::SqsQueue;

use crate::sigv4::{lock, refuse, refused, serve_double, signing_config, SigningKey};

/// The credentials senders sign with, and the double verifies with.
pub const QUEUE_KEY: SigningKey = SigningKey {
    access_key: "AKIDSQSTEST",
    secret_key: "sqs-test-secret-do-not-log",
    region: "eu-west-1",
    service: "sqs",
};
/// The queue senders name.
pub const QUEUE_URL: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/snapwake-due";

/// A message the queue took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub body: String,
    /// Its `DelaySeconds` (0: none).
    pub delay_s: u64,
}

/// How the next entries fail, one fault per entry, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryFault {
    /// `InternalError`, not the sender's fault: send it again.
    Internal,
    /// `InvalidParameterValue`, the sender's fault.
    Invalid,
}

#[derive(Default)]
struct Shared {
    taken: Mutex<Vec<Message>>,
    faults: Mutex<Vec<EntryFault>>,
    calls: AtomicU32,
    bad_signatures: AtomicU32,
}

pub struct SqsDouble {
    pub endpoint: String,
    shared: Arc<Shared>,
}

impl SqsDouble {
    pub async fn start() -> SqsDouble {
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .route("/", post(send_message_batch))
            .with_state(shared.clone());
        SqsDouble {
            endpoint: serve_double(app).await,
            shared,
        }
    }

    /// snapwake's fan-out queue, pointed here, signing with `secret`.
    pub fn sender_signing_with(&self, secret: &str) -> SqsQueue {
        let config = signing_config(&QUEUE_KEY, secret);
        SqsQueue::with_endpoint(&config, QUEUE_URL, Some(self.endpoint.clone())).expect("a queue")
    }

    /// snapwake's fan-out queue, pointed here, signing with the test credentials.
    pub fn sender(&self) -> SqsQueue {
        self.sender_signing_with(QUEUE_KEY.secret_key)
    }

    /// Fail the next entries, one fault each, in order.
    pub fn fail_next(&self, faults: &[EntryFault]) {
        lock(&self.shared.faults).extend_from_slice(faults);
    }

    /// The messages taken, in order.
    pub fn messages(&self) -> Vec<Message> {
        lock(&self.shared.taken).clone()
    }

    /// `SendMessageBatch` calls answered 200.
    pub fn calls(&self) -> u32 {
        self.shared.calls.load(Ordering::SeqCst)
    }

    /// Requests refused for their signature.
    pub fn bad_signatures(&self) -> u32 {
        self.shared.bad_signatures.load(Ordering::SeqCst)
    }
}

async fn send_message_batch(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let call = (
        "AmazonSQS.SendMessageBatch",
        "application/x-amz-json-1.0",
        &QUEUE_KEY,
    );
    if let Some(refusal) = refused(call, &headers, &body, &shared.bad_signatures) {
        return refusal;
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return refuse(StatusCode::BAD_REQUEST, "SerializationException", "body");
    };
    if request["QueueUrl"] != QUEUE_URL {
        return refuse(StatusCode::BAD_REQUEST, "QueueDoesNotExist", "QueueUrl");
    }
    let Some(entries) = request["Entries"]
        .as_array()
        .filter(|e| (1..=10).contains(&e.len()))
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "TooManyEntriesInBatchRequest",
            "1 to 10",
        );
    };
    let ids: HashSet<&str> = entries.iter().filter_map(|e| e["Id"].as_str()).collect();
    if ids.len() != entries.len() {
        return refuse(StatusCode::BAD_REQUEST, "BatchEntryIdsNotDistinct", "Id");
    }
    let mut successful = Vec::new();
    let mut failed = Vec::new();
    for entry in entries {
        let id = entry["Id"].as_str().unwrap_or_default();
        let Some(body) = entry["MessageBody"].as_str().filter(|b| !b.is_empty()) else {
            failed.push(json!({"Id": id, "Code": "MissingParameter", "SenderFault": true}));
            continue;
        };
        // A standard queue refuses a FIFO queue's parameters.
        let fifo = ["MessageGroupId", "MessageDeduplicationId"]
            .iter()
            .any(|f| entry.get(*f).is_some());
        let delay_s = match entry.get("DelaySeconds") {
            None => Some(0),
            Some(d) => d.as_u64().filter(|d| *d <= 900),
        };
        let (false, Some(delay_s)) = (fifo, delay_s) else {
            failed.push(json!({"Id": id, "Code": "InvalidParameterValue", "SenderFault": true}));
            continue;
        };
        let fault = {
            let mut faults = lock(&shared.faults);
            (!faults.is_empty()).then(|| faults.remove(0))
        };
        match fault {
            Some(EntryFault::Internal) => {
                failed.push(json!({"Id": id, "Code": "InternalError", "SenderFault": false}));
                continue;
            }
            Some(EntryFault::Invalid) => {
                failed
                    .push(json!({"Id": id, "Code": "InvalidParameterValue", "SenderFault": true}));
                continue;
            }
            None => {}
        }
        lock(&shared.taken).push(Message {
            body: body.to_string(),
            delay_s,
        });
        successful.push(json!({"Id": id, "MessageId": uuid::Uuid::new_v4().to_string()}));
    }
    shared.calls.fetch_add(1, Ordering::SeqCst);
    (
        StatusCode::OK,
        json!({"Successful": successful, "Failed": failed}).to_string(),
    )
}
