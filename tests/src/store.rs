//! A fresh table per test on DynamoDB Local (Amazon's own engine).

use snapwake::domain::{AgentKey, Kind, ScheduleRecord, WakeState};
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::table::{create_table, create_table_without_stream};
use snapwake::store::{AgentStore, Changes, Condition, ScheduleStore, StoreError};

pub const REGION: &str = "cn-beijing";

/// A fresh table on DynamoDB Local. Without `AWS_ENDPOINT_URL` this fails loudly: the
/// DynamoDB-backed tests must not pass by not running (scripts/test.sh starts it).
pub async fn dynamo_store(test: &str) -> DynamoStore {
    dynamo_table(&table_name(test), true).await
}

/// [`dynamo_store`] whose table keeps a stream of its changes, as deployed: for the tests that
/// read the state-change events (`crate::relay`). The others go without, since DynamoDB Local
/// slows down as stream records pile up (`create_table_without_stream`).
pub async fn dynamo_store_streamed(test: &str) -> DynamoStore {
    let table = table_name(test);
    let store = DynamoStore::from_env(&table).await;
    create_table(store.client(), &table)
        .await
        .unwrap_or_else(|e| panic!("cannot create table {table}: {e}"));
    store
}

/// A fresh table's name for `test`.
fn table_name(test: &str) -> String {
    assert!(
        std::env::var_os("AWS_ENDPOINT_URL").is_some(),
        "AWS_ENDPOINT_URL is not set: start DynamoDB Local with \
         `eval \"$(scripts/start-dynamodb-local.sh)\"` or run scripts/test.sh"
    );
    format!(
        "{}-{}",
        test.replace('_', "-"),
        uuid::Uuid::new_v4().simple()
    )
}

/// The store over `table`, creating it (without a stream) when asked.
pub async fn dynamo_table(table: &str, create: bool) -> DynamoStore {
    let store = DynamoStore::from_env(table).await;
    if create {
        create_table_without_stream(store.client(), table)
            .await
            .unwrap_or_else(|e| panic!("cannot create table {table}: {e}"));
    }
    store
}

/// Hold the codex agent `agent_id`, which has no record yet, as an operation that acquired it
/// would (no AgentKit involved): in `state`, by `holder`, with a lease until `lease_until_ms`.
pub async fn hold<S: AgentStore>(
    store: &S,
    agent_id: &str,
    state: WakeState,
    holder: &str,
    lease_until_ms: u64,
) {
    store
        .update(
            &AgentKey::new(Kind::Codex, agent_id),
            &Condition::Absent,
            &Changes {
                state: Some(state),
                holder: Some(Some(holder.into())),
                bump_fence: true,
                lease_until_ms: Some(lease_until_ms),
                ..Changes::default()
            },
        )
        .await
        .unwrap();
}

/// Write a new schedule `record` straight to the store, as a setup step: a client's write. The
/// SDK sends an attempt again when one outlives its timeout (3 s; DynamoDB Local on a loaded
/// machine can take that long), and the repeat of a write that had landed finds its own item:
/// a conflict whose current record is the one written is this write, done.
pub async fn put_new_schedule(store: &DynamoStore, record: &ScheduleRecord) {
    match store.put_schedule(record, 0).await {
        Ok(_) => {}
        Err(StoreError::ScheduleConflict {
            current: Some(current),
        }) if current.version == 1
            && current.key == record.key
            && (&current.wake, &current.sleep, &current.next_wake_ms)
                == (&record.wake, &record.sleep, &record.next_wake_ms) => {}
        Err(e) => panic!("cannot write the schedule {:?}: {e}", record.key),
    }
}
