//! Handing the stream's changes to the bus: in order, each change's event published (three
//! tries within [`PUBLISH_BUDGET`]), stopping at the first that could not be, so that delivery
//! resumes there and an agent's events keep the order of its versions. The deployed consumer
//! (the announce function) reports that change to its event source mapping as the batch's
//! first failure; a local run ([`follow`]) tries it again before anything later.

use std::time::Duration;

use super::{derive, EventSink};
use crate::metrics::{self, Record};
use crate::store::{ChangeSource, RecordChange};

/// The longest one event's publishing may take (all tries).
pub const PUBLISH_BUDGET: Duration = Duration::from_millis(1500);
const ATTEMPTS: u32 = 3;

/// What publishing a batch of changes did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Relayed {
    /// Events published.
    pub published: usize,
    /// The first change whose event could not be published (it and those after it were not
    /// handled): its `sequence`.
    pub failed_at: Option<String>,
}

/// Publish the events of `changes`, in order, to `sink`, stopping at the first failure.
pub async fn announce<E: EventSink>(changes: &[RecordChange], sink: &E) -> Relayed {
    let mut relayed = Relayed::default();
    for change in changes {
        let Some(event) = derive(change) else {
            continue;
        };
        if !sink.enabled() {
            continue;
        }
        match publish(sink, &event).await {
            Ok(()) => {
                relayed.published += 1;
                metrics::emit(Record::of("events").count("EventsPublished", 1));
            }
            Err(error) => {
                tracing::warn!(
                    detail_type = %event.detail_type,
                    change_id = %event.detail.change_id,
                    %error,
                    "a state-change event was not published; delivery resumes from it"
                );
                metrics::emit(Record::of("events").count("EventsFailed", 1));
                relayed.failed_at = Some(change.sequence.clone());
                break;
            }
        }
    }
    relayed
}

/// One event, tried [`ATTEMPTS`] times within [`PUBLISH_BUDGET`].
async fn publish<E: EventSink>(sink: &E, event: &crate::domain::StateEvent) -> Result<(), String> {
    let attempts = async {
        let mut last = None;
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(100 * 3u64.pow(attempt - 1))).await;
            }
            match sink.publish(event).await {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.map_or_else(|| "no attempt".to_string(), |e| e.to_string()))
    };
    tokio::time::timeout(PUBLISH_BUDGET, attempts)
        .await
        .unwrap_or_else(|_| Err("the bus did not answer in time".to_string()))
}

/// Relay `source` to `sink` for as long as the process runs, polling every `every`. Changes
/// whose events could not be published are tried again, before any later one.
pub async fn follow<C: ChangeSource, E: EventSink>(mut source: C, sink: E, every: Duration) {
    let mut pending: Vec<RecordChange> = Vec::new();
    loop {
        if pending.is_empty() {
            match source.next().await {
                Ok(changes) => pending = changes,
                Err(e) => tracing::warn!(error = %e, "the change stream could not be read"),
            }
        }
        if !pending.is_empty() {
            match announce(&pending, &sink).await.failed_at {
                None => {
                    pending.clear();
                    continue;
                }
                Some(at) => {
                    let handled = pending.iter().take_while(|c| c.sequence != at).count();
                    pending.drain(..handled);
                }
            }
        }
        tokio::time::sleep(every).await;
    }
}
