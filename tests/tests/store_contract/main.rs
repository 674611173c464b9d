//! The store contract: one suite of generic checks, run against both adapters of the store
//! port — `MemoryStore` and `DynamoStore` on DynamoDB Local (each test its own table, since
//! DynamoDB Local has no reset call).
//!
//! The DynamoDB variants need DynamoDB Local: `eval "$(scripts/start-dynamodb-local.sh)"`
//! (scripts/test.sh does it). Without `AWS_ENDPOINT_URL` they fail, so a run that forgot to
//! start it cannot pass by silently testing one adapter; `SNAPWAKE_SKIP_DYNAMODB=1` skips them
//! on purpose.

mod support;

mod conditions;
mod records;
mod owner_index;
mod documents_and_registry;
mod races;
mod schedules;
mod budget;
mod dynamodb_failures;
mod lock;
mod usage;

use support::*;

// The contract's checks, by name, for `contract!` below.
use budget::*;
use conditions::*;
use documents_and_registry::*;
use lock::*;
use owner_index::*;
use races::*;
use records::*;
use schedules::*;
use usage::*;

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
    idle_index_reads_the_awake_agents_by_their_idle_time,
    budget_slots_are_taken_once_in_order,
    budget_slowdowns_are_kept_once_a_gap,
    lost_answers_are_resolved_by_the_fields_written,
    anyone_settles_only_the_wake_it_watched,
    one_poll_lease_per_version,
    a_poll_lease_taken_until_the_same_instant_has_one_winner,
    a_poll_lease_whose_answer_was_lost_is_still_taken,
    announced_writes_leave_the_usage_mark,
    usage_rows_add_each_change_once,
);
