//! The delete function's events end to end (docs/operations.md, docs/http-api.md "Events"):
//! EventBridge payloads as AWS delivers them (tests/fixtures/eventbridge/), the retention sweep
//! (index, prune, checkpoint) and offboarding, on DynamoDB Local with AgentKit simulated over HTTP.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::{AgentKit, AgentKitClient};
use snapwake::ambient::{now_ms, now_s};
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::identity::caller;
use snapwake::index_sync::index_status;
use snapwake::invocation::Deadline;
use snapwake::store::{AgentStore, Changes, Condition};
use snapwake_delete::OffboardReport;
use snapwake_delete::RetentionPolicy;
use snapwake_delete::{classify, Invocation};
use snapwake_delete::{Delete, DeleteSettings, TOMBSTONE_TTL_S};
use snapwake_delete::{SweepReport, SweepSettings, CHECKPOINT};
use snapwake_list::ListSettings;
use snapwake_sim::{Fault, SeedSession, SeedSnapshot};
use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;
use time::OffsetDateTime;

pub(crate) const DAY: Duration = Duration::from_secs(24 * 3600);
/// The `source` of tests/fixtures/eventbridge/owner-offboarded.json.
pub(crate) const OFFBOARDING_SOURCE: &str = "studio.identity";

mod checkpoint;
mod events;
mod idle;
mod index_freshness;
mod offboarding;
mod offboarding_paths;
mod offboarding_persists;
mod owner_index;
mod racing;
mod regions_and_claims;
mod retention;
mod slices;
mod way_back;

// Helpers shared by the modules below.
/// An EventBridge payload of tests/fixtures/eventbridge/.
pub(crate) fn fixture(name: &str) -> Value {
    let path = format!("{}/fixtures/eventbridge/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The lock given back with the agent asleep: what a holder writes when it lets go.
pub(crate) fn given_back_asleep() -> Changes {
    Changes {
        state: Some(WakeState::Asleep),
        holder: Some(None),
        lease_until_ms: Some(0),
        ..Changes::default()
    }
}

/// The delete function with the lock of [`quick_wake`], the sweep settings given, and
/// offboarding on the source the offboarding fixture names (an identity system of the studio).
pub(crate) fn cleanup_fn<S, K>(store: S, agentkit: K, sweep: SweepSettings) -> Delete<S, K> {
    let settings = DeleteSettings {
        sweep,
        offboarding: snapwake_delete::OffboardSettings {
            sources: vec![OFFBOARDING_SOURCE.into()],
        },
        ..delete_settings(&quick_wake())
    };
    delete_fn(store, agentkit, settings)
}

/// A retention policy keeping the newest `keep` snapshots of each agent, deleting those older
/// than `max_age` and the agents idle for longer than `max_idle`.
pub(crate) fn retention(
    keep: usize,
    max_age: Option<Duration>,
    max_idle: Option<Duration>,
) -> RetentionPolicy {
    RetentionPolicy {
        keep,
        max_age,
        max_idle,
    }
}

/// The default sweep under `policy`.
pub(crate) fn sweep_under(policy: RetentionPolicy) -> SweepSettings {
    SweepSettings {
        policy,
        ..SweepSettings::default()
    }
}

/// The default sweep, starting an agent or a deletion only with `margin` left, `concurrency`
/// agents at once.
pub(crate) fn sweep_with_margin(margin: Duration, concurrency: usize) -> SweepSettings {
    SweepSettings {
        margin,
        concurrency,
        ..SweepSettings::default()
    }
}

/// A Lambda context whose invocation ends `ms` from now.
pub(crate) fn context(ms: u64) -> lambda_http::Context {
    let mut ctx = lambda_http::Context::default();
    ctx.deadline = now_ms() + ms;
    ctx
}

/// One run of the sweep with `budget`.
pub(crate) async fn sweep<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Delete<S, K>,
    budget: Duration,
) -> SweepReport {
    f.sweep(Deadline::after(budget), false, &snapwake_delete::Quiet)
        .await
        .unwrap()
}

/// Runs of `budget` each, one after the other, until one completes the pass (at most
/// `at_most`): every run's report. The last one must have completed.
pub(crate) async fn sweep_until_complete<
    S: AgentStore + snapwake::store::ScheduleStore,
    K: AgentKit,
>(
    f: &Delete<S, K>,
    budget: Duration,
    at_most: usize,
) -> Vec<SweepReport> {
    let mut reports = Vec::new();
    for _ in 0..at_most {
        let report = sweep(f, budget).await;
        let done = report.completed;
        reports.push(report);
        if done {
            break;
        }
    }
    assert!(
        reports.last().is_some_and(|r| r.completed),
        "no run completed the pass: {reports:#?}"
    );
    reports
}

pub(crate) async fn offboard<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Delete<S, K>,
    owner: &str,
) -> OffboardReport {
    f.offboard(
        owner,
        Deadline::after(Duration::from_secs(60)),
        false,
        &snapwake_delete::Quiet,
    )
    .await
    .unwrap()
}

pub(crate) fn codex(agent_id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, agent_id)
}

pub(crate) fn received(world: &World, action: &str) -> u64 {
    world.received(action)
}

/// The snapshot ids the simulator holds for `agent_id`.
pub(crate) fn held(world: &World, agent_id: &str) -> BTreeSet<String> {
    world.snapshots_of(agent_id).into_iter().collect()
}

/// One seeded agent: its owner and its snapshots as (created_at, id).
#[derive(Clone, Debug)]
pub(crate) struct Seeded {
    pub(crate) owner: String,
    pub(crate) snapshots: Vec<(OffsetDateTime, String)>,
}

impl Seeded {
    /// The ids of the newest `n` snapshots, computed from the seeded times alone.
    pub(crate) fn newest(&self, n: usize) -> BTreeSet<String> {
        let mut by_time = self.snapshots.clone();
        by_time.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        by_time.into_iter().take(n).map(|(_, id)| id).collect()
    }

    pub(crate) fn all(&self) -> BTreeSet<String> {
        self.snapshots.iter().map(|(_, id)| id.clone()).collect()
    }
}

/// A Ready snapshot seed of `owner`'s agent `agent_id` on `tool`, created at `at`.
pub(crate) fn snapshot_seed(
    tool: &str,
    owner: &str,
    agent_id: &str,
    at: OffsetDateTime,
) -> SeedSnapshot {
    SeedSnapshot {
        tool_id: tool.to_string(),
        user_session_id: Some(agent_id.to_string()),
        session_id: Some(format!("s-{}", uuid::Uuid::new_v4().simple())),
        created_at: Some(at),
        session_metadata: vec![
            MetadataEntry::string("Username", owner),
            MetadataEntry::string("veadk_display_name", format!("{owner}'s agent")),
        ],
        ..SeedSnapshot::default()
    }
}

/// `per_owner` agents of each of `owners` on the recoverable Tool, `per_agent` Ready snapshots
/// each, every snapshot at its own minute (all of them at least a day old), seeded out of
/// time order so that nothing can rely on the order AgentKit lists them in.
pub(crate) fn seed_fleet(
    world: &World,
    owners: &[&str],
    per_owner: usize,
    per_agent: usize,
) -> BTreeMap<String, Seeded> {
    let base = OffsetDateTime::now_utc() - DAY;
    let mut seeds = Vec::new();
    let mut plan: Vec<(String, String, OffsetDateTime)> = Vec::new();
    let mut minute = 0u64;
    for owner in owners {
        for _ in 0..per_owner {
            let agent_id = caller::mint(owner);
            // 0, n-1, 1, n-2, ...: a permutation of the ages.
            for j in 0..per_agent {
                let age = if j % 2 == 0 {
                    j / 2
                } else {
                    per_agent - 1 - j / 2
                };
                let at = base - Duration::from_secs(60 * (minute + age as u64));
                plan.push((owner.to_string(), agent_id.clone(), at));
                seeds.push(snapshot_seed(&world.recoverable, owner, &agent_id, at));
            }
            minute += per_agent as u64;
        }
    }
    let ids = world.sim.control().seed_snapshots(seeds).unwrap();
    let mut fleet: BTreeMap<String, Seeded> = BTreeMap::new();
    for ((owner, agent_id, at), id) in plan.into_iter().zip(ids) {
        fleet
            .entry(agent_id)
            .or_insert_with(|| Seeded {
                owner,
                snapshots: Vec::new(),
            })
            .snapshots
            .push((at, id));
    }
    fleet
}

/// Every agent of `fleet` holds exactly its newest `keep` snapshots, in AgentKit and in the
/// summaries of its record.
pub(crate) async fn assert_newest_kept<S: AgentStore + snapwake::store::ScheduleStore>(
    store: &S,
    world: &World,
    fleet: &BTreeMap<String, Seeded>,
    keep: usize,
) {
    for (agent_id, seeded) in fleet {
        let want = seeded.newest(keep);
        assert_eq!(held(world, agent_id), want, "snapshots of {agent_id}");
        let record = store.get(&codex(agent_id)).await.unwrap().unwrap();
        let summaries: BTreeSet<String> = record
            .snapshots
            .iter()
            .map(|s| s.snapshot_id.clone())
            .collect();
        assert_eq!(summaries, want, "the record's summaries of {agent_id}");
        assert_eq!(record.state, WakeState::Asleep, "{agent_id} rests again");
        assert!(record.holder.is_none(), "{agent_id}: the lock is released");
    }
}

pub(crate) fn total_snapshots(fleet: &BTreeMap<String, Seeded>) -> usize {
    fleet.values().map(|s| s.snapshots.len()).sum()
}
