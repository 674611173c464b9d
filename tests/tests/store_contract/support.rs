//! What every check of the contract uses: the store types, a few records and conditions, and
//! the two adapters, each over a table of its own.

pub use std::collections::HashSet;
pub use std::sync::Arc;

pub use snapwake::ambient::{now_ms, now_s};
pub use snapwake::domain::Description;
pub use snapwake::domain::{
    AgentKey, AgentRecord, Kind, KindTools, Retention, ToolRegistry, WakeState,
};
pub use snapwake::store::dynamo::{sdk_defaults, DynamoStore};
pub use snapwake::store::memory::MemoryStore;
pub use snapwake::store::table::{create_table, create_table_without_stream};
pub use snapwake::store::{AgentStore, Changes, Condition, StoreError};

// ---------------------------------------------------------------------------------------------
// Helpers

pub fn key(id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, id)
}

/// An acquire as `waking` by `holder`.
pub fn acquire(holder: &str) -> Changes {
    Changes {
        state: Some(WakeState::Waking),
        holder: Some(Some(holder.to_string())),
        bump_fence: true,
        lease_until_ms: Some(now_ms() + 60_000),
        ..Default::default()
    }
}

pub fn held(holder: &str, fence: u64) -> Condition {
    Condition::Held {
        holder: holder.to_string(),
        fence,
    }
}

pub fn described(owner_key: Option<&str>, created_at: Option<&str>) -> Changes {
    Changes {
        state: Some(WakeState::Asleep),
        describe: Some(Description {
            owner_key: owner_key.map(str::to_string),
            created_at: created_at.map(str::to_string),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The current record of a failed condition; panics on success or any other error.
#[track_caller]
pub fn conflict(result: Result<AgentRecord, StoreError>) -> Option<AgentRecord> {
    match result {
        Err(StoreError::ConditionFailed { current }) => current.map(|b| *b),
        other => panic!("expected ConditionFailed, got {other:?}"),
    }
}

pub async fn list_all<S: AgentStore + snapwake::store::ScheduleStore>(
    store: &S,
    owner_key: &str,
    page: u32,
) -> Vec<AgentKey> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let p = store
            .query_owner(owner_key, page, cursor.as_deref())
            .await
            .unwrap();
        assert!(p.records.len() <= page as usize, "page larger than limit");
        assert!(
            !p.records.is_empty() || p.cursor.is_none(),
            "an empty page with a cursor"
        );
        out.extend(p.records.into_iter().map(|r| r.key));
        match p.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
    panic!("pagination did not end");
}

// ---------------------------------------------------------------------------------------------
// The two adapters

pub fn memory_store() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new())
}

/// A `DynamoStore` over a new table of its own, on DynamoDB Local.
pub async fn dynamo_store(test: &str) -> Option<Arc<DynamoStore>> {
    if std::env::var_os("AWS_ENDPOINT_URL").is_none() {
        if std::env::var("SNAPWAKE_SKIP_DYNAMODB").as_deref() == Ok("1") {
            eprintln!("SNAPWAKE_SKIP_DYNAMODB=1: skipping the DynamoDB variant of {test}");
            return None;
        }
        panic!(
            "AWS_ENDPOINT_URL is not set, so the DynamoDB variant of the store contract cannot \
             run. Start DynamoDB Local with `eval \"$(scripts/start-dynamodb-local.sh)\"` (or \
             run scripts/test.sh), or set SNAPWAKE_SKIP_DYNAMODB=1 to skip these tests on purpose."
        );
    }
    let table = format!(
        "contract-{}-{}",
        test.replace('_', "-"),
        uuid::Uuid::new_v4().simple()
    );
    let store = DynamoStore::from_env(&table).await;
    create_table_without_stream(store.client(), &table)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "creating table {table} on {:?}: {e}",
                std::env::var("AWS_ENDPOINT_URL")
            )
        });
    Some(Arc::new(store))
}
