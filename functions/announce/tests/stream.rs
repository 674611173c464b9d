//! The announce function from a DynamoDB stream batch as Lambda hands it over
//! (`fixtures/stream-batch.json`): an agent created, a lock write, the agent asleep because
//! AgentKit's clock ended its session, a schedule item, a tombstone removed by TTL.

use std::sync::Mutex;

use serde_json::Value;
use snapwake::domain::usage::parse_day;
use snapwake::domain::StateEvent;
use snapwake::events::recorded::Recorded;
use snapwake::events::{EventError, EventSink};
use snapwake::store::memory::MemoryStore;
use snapwake::store::UsageStore;
use snapwake_announce::Announce;

fn batch() -> Value {
    serde_json::from_str(include_str!("fixtures/stream-batch.json")).expect("the fixture")
}

#[tokio::test]
async fn a_batch_announces_its_state_changes_in_order_and_nothing_else() {
    let announce = Announce {
        usage: MemoryStore::new(),
        sink: Recorded::new(100, false),
    };
    let answer = announce.handle(&batch(), far()).await;
    assert_eq!(answer, serde_json::json!({"batchItemFailures": []}));
    let events = announce.sink.events();
    let seen: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| {
            (
                e.detail_type.as_str(),
                e.detail.trigger.as_str(),
                e.detail.change_id.as_str(),
            )
        })
        .collect();
    // The lock's write, the schedule item and the TTL's removal announce nothing.
    assert_eq!(
        seen,
        vec![
            (
                "snapwake.agent.created",
                "http",
                "codex/studio-alice-7f3a/1"
            ),
            (
                "snapwake.agent.asleep",
                "agentkit",
                "codex/studio-alice-7f3a/3"
            ),
        ]
    );
    assert_eq!(events[0].detail.session_id.as_deref(), Some("s-001"));
    assert_eq!(events[0].detail.owner.as_deref(), Some("alice"));
    assert_eq!(events[1].detail.snapshot_id.as_deref(), Some("snap-42"));
    assert_eq!(events[1].detail.session_id, None);
    assert_eq!(events[1].detail.at, "2026-12-05T16:00:05Z");
}

/// A bus that takes events until one of `refused` comes.
struct Refusing {
    refused: &'static str,
    taken: Mutex<Vec<String>>,
}

/// The function over a bus that refuses `detail_type`.
fn refusing(detail_type: &'static str) -> Announce<MemoryStore, Refusing> {
    Announce {
        usage: MemoryStore::new(),
        sink: Refusing {
            refused: detail_type,
            taken: Mutex::new(Vec::new()),
        },
    }
}

impl EventSink for Refusing {
    async fn publish(&self, event: &StateEvent) -> Result<(), EventError> {
        if event.detail_type == self.refused {
            return Err(EventError::Failed("500 InternalException".into()));
        }
        self.taken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event.detail.change_id.clone());
        Ok(())
    }
}

#[tokio::test]
async fn the_first_event_the_bus_refuses_is_the_batchs_first_failure() {
    // The second change is refused: the first stands published, the answer names the second
    // record, and nothing after it goes out (the mapping hands it over again from there).
    let announce = refusing("snapwake.agent.asleep");
    let answer = announce.handle(&batch(), far()).await;
    assert_eq!(
        answer,
        serde_json::json!({"batchItemFailures": [{"itemIdentifier": "100000000000000000003"}]})
    );
    assert_eq!(
        *announce.sink.taken.lock().unwrap(),
        vec!["codex/studio-alice-7f3a/1".to_string()]
    );

    // Refused from the first: the whole batch is handed over again.
    let announce = refusing("snapwake.agent.created");
    let answer = announce.handle(&batch(), far()).await;
    assert_eq!(
        answer["batchItemFailures"][0]["itemIdentifier"],
        "100000000000000000001"
    );
    assert!(announce.sink.taken.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_unreadable_record_is_skipped_not_held_against_the_rest() {
    let mut batch = batch();
    // An image DynamoDB would never write: skipped (logged), the rest announced.
    batch["Records"][0]["dynamodb"]["NewImage"]["version"] = serde_json::json!({"N": "one"});
    let announce = Announce {
        usage: MemoryStore::new(),
        sink: Recorded::new(100, false),
    };
    let answer = announce.handle(&batch, far()).await;
    assert_eq!(answer["batchItemFailures"], serde_json::json!([]));
    let events = announce.sink.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].detail_type, "snapwake.agent.asleep");
}

/// A deadline no test reaches: the invocation's time is not what these tests are about.
fn far() -> snapwake::invocation::Deadline {
    snapwake::invocation::Deadline::after(std::time::Duration::from_secs(60))
}

#[tokio::test]
async fn a_batch_keeps_its_usage_once_however_often_it_is_delivered() {
    let announce = Announce {
        usage: MemoryStore::new(),
        sink: Recorded::new(100, false),
    };
    let day = parse_day("2026-12-05").expect("a day");
    for _ in 0..3 {
        let answer = announce.handle(&batch(), far()).await;
        assert_eq!(answer["batchItemFailures"], serde_json::json!([]));
    }
    let rows = announce
        .usage
        .usage_rows(day, day, None)
        .await
        .expect("rows");
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let t = rows[0].tally;
    // Created at 08:00:00 by a person, asleep at 16:00:05 when AgentKit's clock ended it.
    assert_eq!(t.awake_person_s, 8 * 3_600 + 5);
    assert_eq!((t.creates, t.sleeps_agentkit, t.snapshots), (1, 1, 1));
}
