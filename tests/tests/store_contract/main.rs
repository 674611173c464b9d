//! The store contract: one suite of generic checks, run against both adapters of the store
//! port — `MemoryStore` and `DynamoStore` on DynamoDB Local (each test its own table, since
//! DynamoDB Local has no reset call).
//!
//! The DynamoDB variants need DynamoDB Local: `eval "$(scripts/start-dynamodb-local.sh)"`
//! (scripts/test.sh does it). Without `AWS_ENDPOINT_URL` they fail, so a run that forgot to
//! start it cannot pass by silently testing one adapter; `SNAPWAKE_SKIP_DYNAMODB=1` skips them
//! on purpose.

use std::collections::HashSet;
use std::sync::Arc;

use snapwake::domain::Description;
use snapwake::domain::{
    AgentKey, AgentRecord, Kind, KindTools, Retention, ToolRegistry, WakeState,
};
use snapwake::store::dynamo::{sdk_defaults, DynamoStore};
use snapwake::store::memory::MemoryStore;
use snapwake::store::table::{create_table, create_table_without_stream};
use snapwake::store::{AgentStore, Changes, Condition, StoreError};
use snapwake::timestamp::{now_ms, now_s};

// ---------------------------------------------------------------------------------------------
// Helpers

fn key(id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, id)
}

/// An acquire as `waking` by `holder`.
fn acquire(holder: &str) -> Changes {
    Changes {
        state: Some(WakeState::Waking),
        holder: Some(Some(holder.to_string())),
        bump_fence: true,
        lease_until_ms: Some(now_ms() + 60_000),
        ..Default::default()
    }
}

fn held(holder: &str, fence: u64) -> Condition {
    Condition::Held {
        holder: holder.to_string(),
        fence,
    }
}

fn described(owner_key: Option<&str>, created_at: Option<&str>) -> Changes {
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
fn conflict(result: Result<AgentRecord, StoreError>) -> Option<AgentRecord> {
    match result {
        Err(StoreError::ConditionFailed { current }) => current.map(|b| *b),
        other => panic!("expected ConditionFailed, got {other:?}"),
    }
}

async fn list_all<S: AgentStore + snapwake::store::ScheduleStore>(
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

mod conditions;
mod records;
mod owner_index;
mod documents_and_registry;
mod races;
mod schedules;
mod budget;
mod dynamodb_failures;
mod lock;

// The contract's checks, by name, for `contract!` below.
use budget::*;
use conditions::*;
use documents_and_registry::*;
use lock::*;
use owner_index::*;
use races::*;
use records::*;
use schedules::*;

// ---------------------------------------------------------------------------------------------
// The two adapters

fn memory_store() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new())
}

/// A `DynamoStore` over a new table of its own, on DynamoDB Local.
async fn dynamo_store(test: &str) -> Option<Arc<DynamoStore>> {
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

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::memory_store()).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    if let Some(store) = super::dynamo_store(stringify!($name)).await {
                        super::$name(store).await;
                    }
                }
            )*
        }
    };
}

contract!(
    missing_reads_absent,
    absent_acquire_creates_with_fence_1_version_1,
    second_absent_acquire_fails_with_current,
    version_cas,
    held_fenced_write,
    waking_with_complete_by_anyone,
    some_none_removes_a_field,
    wake_fields_round_trip_and_clear_on_create,
    expired_reads_absent_and_is_reacquired,
    describe_fields_round_trip,
    get_many_reads_the_live_records_asked_for,
    owner_index_newest_first_with_pages,
    owner_index_skips_expired_and_ownerless,
    owner_index_pages_past_many_tombstones,
    owner_index_rejects_foreign_cursors,
    registry_cas,
    documents_cas_and_expiry,
    concurrent_absent_acquires_one_winner,
    concurrent_version_acquires_one_winner,
    schedules_cas_round_trip_and_delete,
    due_index_reads_only_the_due_in_order,
    budget_slots_are_taken_once_in_order,
    budget_slowdowns_are_kept_once_a_gap,
    lost_answers_are_resolved_by_the_fields_written,
    anyone_settles_only_the_wake_it_watched,
    one_poll_lease_per_version,
    a_poll_lease_taken_until_the_same_instant_has_one_winner,
    a_poll_lease_whose_answer_was_lost_is_still_taken,
);
