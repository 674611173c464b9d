//! The stream consumer as the tests run it: the table's changes (DynamoDB Local's stream, or
//! the memory store's feed) relayed to the usage rows and an event sink in the background, as
//! the deployed announce function relays them, and a way to wait until everything written so far has been
//! handed over ([`Relay::caught_up`]), so that an assertion on the bus never races the relay.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use snapwake::ambient::now_ms;
use snapwake::events::{consume, EventSink};
use snapwake::store::dynamo::stream::{StartAt, TableStream};
use snapwake::store::dynamo::{sdk_defaults, DynamoStore};
use snapwake::store::{ChangeSource, RecordChange, UsageStore};

/// How often the relay reads the stream.
const POLL: Duration = Duration::from_millis(50);

/// A relay running in the background; it stops when dropped.
pub struct Relay {
    /// When the last read began that found nothing new and left nothing unpublished (epoch
    /// ms): every change written before then has been handed to the sink.
    drained_at: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Relay {
    /// Relay `source` to `usage` and `sink` as the announce function does
    /// (`snapwake::events::consume`); a change whose usage or event cannot be written is tried
    /// again, before anything later, until it is.
    pub fn start<C, S, E>(mut source: C, usage: S, sink: E) -> Relay
    where
        C: ChangeSource + 'static,
        S: UsageStore + 'static,
        E: EventSink + 'static,
    {
        let drained_at = Arc::new(AtomicU64::new(0));
        let drained = drained_at.clone();
        let task = tokio::spawn(async move {
            let mut pending: Vec<RecordChange> = Vec::new();
            loop {
                let began = now_ms();
                if pending.is_empty() {
                    match source.next().await {
                        Ok(changes) if changes.is_empty() => {
                            drained.store(began, Ordering::SeqCst);
                        }
                        Ok(changes) => pending = changes,
                        Err(e) => tracing::warn!(error = %e, "relay: the stream could not be read"),
                    }
                }
                if !pending.is_empty() {
                    match consume(
                        &pending,
                        &usage,
                        &sink,
                        snapwake::invocation::Deadline::after(std::time::Duration::from_secs(60)),
                    )
                    .await
                    .failed_at
                    {
                        None => pending.clear(),
                        Some(at) => {
                            let done = pending.iter().take_while(|c| c.sequence != at).count();
                            pending.drain(..done);
                        }
                    }
                }
                tokio::time::sleep(POLL).await;
            }
        });
        Relay { drained_at, task }
    }

    /// The stream of `store`'s table from its first write.
    pub async fn of_table<E: EventSink + 'static>(store: &DynamoStore, sink: E) -> Relay {
        Relay::start(table_stream(store).await, store.clone(), sink)
    }

    /// Wait until every change written before this call has been handed to the sink (at most
    /// 60 s: a relay stuck behind a bus that refuses everything fails the test).
    pub async fn caught_up(&self) {
        let asked = now_ms();
        let limit = tokio::time::Instant::now() + Duration::from_secs(60);
        while self.drained_at.load(Ordering::SeqCst) <= asked {
            assert!(
                tokio::time::Instant::now() < limit,
                "the relay did not catch up with the table within 60 s"
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

/// The stream of `store`'s table (DynamoDB Local's), from its first write.
pub async fn table_stream(store: &DynamoStore) -> TableStream {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL: DynamoDB Local");
    let sdk = sdk_defaults().load().await;
    TableStream::open(store, &sdk, endpoint, StartAt::Oldest)
        .await
        .expect("the table's stream")
}
