//! [`Announcing`]: a store that publishes the state change a successful write announces.
//!
//! Never blocking the change it reports: the write has happened when the event is built, and
//! a publish that fails is tried twice more within [`PUBLISH_BUDGET`], then logged and counted
//! (`EventsFailed`); the caller gets the write's own answer either way.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::{current_trigger, EventSink};
use crate::domain::failure::recorded_code;
use crate::domain::{AgentRecord, Announce, EventDetail, StateEvent};
use crate::metrics::{self, Record};
use crate::store::{Answer, Call, Changes, Layer};

/// The longest a state change waits for its event to be published (all attempts).
pub const PUBLISH_BUDGET: Duration = Duration::from_millis(1500);
const ATTEMPTS: u32 = 3;

/// `inner`, publishing to `sink` the event each announcing write makes.
pub struct Announcing<S, E> {
    pub inner: S,
    pub sink: E,
}

impl<S, E> Announcing<S, E> {
    pub fn new(inner: S, sink: E) -> Self {
        Announcing { inner, sink }
    }
}

/// The event of `announce` written as `record`.
pub fn event_of(announce: Announce, record: &AgentRecord) -> StateEvent {
    let key = &record.key;
    let error_code = match announce {
        Announce::WakeFailed => record
            .error
            .as_deref()
            .map(|e| recorded_code(e).unwrap_or("WAKE_FAILED").to_string()),
        _ => None,
    };
    let (session_id, snapshot_id) = match announce {
        Announce::Awake | Announce::Created => (record.session_id.clone(), None),
        Announce::Asleep => (
            None,
            record.snapshots.first().map(|s| s.snapshot_id.clone()),
        ),
        Announce::WakeFailed => (None, record.snapshot_id.clone()),
        Announce::Deleted => (None, None),
    };
    StateEvent {
        detail_type: announce.detail_type().to_string(),
        detail: EventDetail {
            kind: key.kind,
            agent_id: key.agent_id.clone(),
            owner: record.description.owner.clone(),
            session_id,
            snapshot_id,
            error_code,
            at: record
                .updated_at
                .clone()
                .unwrap_or_else(crate::timestamp::now),
            trigger: current_trigger(),
            change_id: format!("{}/{}/{}", key.kind, key.agent_id, record.version),
        },
    }
}

impl<S: Send + Sync, E: EventSink> Announcing<S, E> {
    /// Publish `event`, retried within [`PUBLISH_BUDGET`]; a failure is logged and counted.
    async fn announce(&self, event: StateEvent) {
        let attempts = async {
            let mut last = None;
            for attempt in 0..ATTEMPTS {
                if attempt > 0 {
                    tokio::time::sleep(Duration::from_millis(100 * 3u64.pow(attempt - 1))).await;
                }
                match self.sink.publish(&event).await {
                    Ok(()) => return Ok(()),
                    Err(e) => last = Some(e),
                }
            }
            Err(last)
        };
        let failed = match tokio::time::timeout(PUBLISH_BUDGET, attempts).await {
            Ok(Ok(())) => {
                metrics::emit(Record::of("events").count("EventsPublished", 1));
                return;
            }
            Ok(Err(e)) => e.map_or_else(|| "no attempt".to_string(), |e| e.to_string()),
            Err(_) => "the bus did not answer in time".to_string(),
        };
        tracing::warn!(
            detail_type = %event.detail_type,
            change_id = %event.detail.change_id,
            error = %failed,
            "a state-change event was not published"
        );
        metrics::emit(Record::of("events").count("EventsFailed", 1));
    }
}

impl<S: Send + Sync, E: EventSink> Layer for Announcing<S, E> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, _: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        answer
    }

    fn written<'a>(
        &'a self,
        changes: &'a Changes,
        record: &'a AgentRecord,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            if let Some(announce) = changes.announce.filter(|_| self.sink.enabled()) {
                self.announce(event_of(announce, record)).await;
            }
        })
    }
}
