//! The announce function (docs/events.md): the consumer of the table's DynamoDB stream. Its
//! event source mapping hands it the stream's records in order, only those whose new image
//! carries an announcement (the mapping's filter), a batch at a time; it adds each change to
//! its agent's usage rows (docs/usage.md: its only table access, the `USAGE#` partitions), then
//! derives each record's state-change event from the record the write left and publishes it.
//! A change whose usage cannot be written is handed over again like an event not published.
//!
//! Why a function on an event source mapping, not EventBridge Pipes: the event is computed from
//! the record (the error's code, the snapshot kept, the `change_id`), which a Pipe's input
//! template cannot do; a Pipe would need a function to enrich it anyway, and then has two
//! things to configure and alarm where the mapping has one.
//!
//! Delivery is at least once and in order. A batch is published ten events to a call (never
//! two of one agent in one call); at the first event the bus does not take (three tries), or
//! when the invocation's deadline leaves no time for another call, the function answers that
//! record's sequence number as the batch's first failure (`ReportBatchItemFailures`), so the
//! mapping hands it over again from there, and nothing after it goes out before it. A crash
//! bisects the batch. A record the mapping gives up on (its retries or its age spent) reaches
//! the on-failure queue, which is alarmed. Consumers drop repeats by `change_id`.

use serde_json::{json, Value};
use snapwake::events::{consume, EventSink};
use snapwake::invocation::Deadline;
use snapwake::store::dynamo::stream::changes_of;
use snapwake::store::UsageStore;

/// The function's logical id in `infra/template.yaml`: its AWS calls are checked against that
/// function's policy (`snapwake::aws_calls`).
pub const FUNCTION: &str = "AnnounceFunction";

/// The announce function: the stream's batches to `usage` and `sink`.
pub struct Announce<S, E> {
    pub usage: S,
    pub sink: E,
}

impl<S: UsageStore, E: EventSink> Announce<S, E> {
    /// One batch of the stream (the mapping's event, `{"Records": [...]}`): its events published
    /// in order, ten to a call, until `deadline` (the invocation's, less the time to answer);
    /// the answer names the first record whose event could not be (or was not tried in time),
    /// if any.
    pub async fn handle(&self, event: &Value, deadline: Deadline) -> Value {
        let records = event["Records"].as_array().cloned().unwrap_or_default();
        let changes = changes_of(&records);
        let relayed = consume(&changes, &self.usage, &self.sink, deadline);
        let relayed = snapwake::invocation::Invocation::http(FUNCTION)
            .run(relayed)
            .await;
        tracing::info!(
            records = records.len(),
            changes = changes.len(),
            published = relayed.published,
            failed_at = relayed.failed_at.as_deref().unwrap_or(""),
            "announced"
        );
        let failures: Vec<Value> = relayed
            .failed_at
            .iter()
            .map(|sequence| json!({ "itemIdentifier": sequence }))
            .collect();
        json!({ "batchItemFailures": failures })
    }
}
