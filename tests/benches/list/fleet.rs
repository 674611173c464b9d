//! What every part of the list benchmark shares: the fleet's size and latency, its
//! snapshots, and how figures are printed.

pub use std::sync::Arc;
pub use std::time::{Duration, Instant};

pub use snapwake::agentkit::types::MetadataEntry;
pub use snapwake::agentkit::AgentKitClient;
pub use snapwake::identity::caller;
pub use snapwake::store::AgentStore;
pub use snapwake_list::{List, ListSettings};
pub use snapwake_sim::{Fault, SeedSnapshot};
pub use snapwake_tests::counting::CountingStore;
pub use snapwake_tests::*;

pub(crate) const OWNERS: usize = 1000;
pub(crate) const MY_AGENTS: usize = 10;
pub(crate) const LATENCY_MS: u64 = 5;
pub(crate) const SCAN_RUNS: usize = 5;
pub(crate) const INDEX_RUNS: usize = 20;
/// The codex Tools of [`World`]: one recoverable, one temporary.
pub(crate) const TOOLS: u64 = 2;

/// A day ago: when the seeded snapshots were made.
pub(crate) fn yesterday() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc() - Duration::from_secs(24 * 3600)
}

/// A Ready snapshot of `owner`'s agent `agent_id` on the recoverable Tool, made yesterday, as a
/// deployment's snapshots are: not all in the last minutes the refresh reads again.
pub(crate) fn yesterdays_snapshot(world: &World, owner: &str, agent_id: &str) -> SeedSnapshot {
    SeedSnapshot {
        tool_id: world.recoverable.clone(),
        user_session_id: Some(agent_id.to_string()),
        session_metadata: vec![MetadataEntry::string("Username", owner)],
        created_at: Some(yesterday()),
        ..SeedSnapshot::default()
    }
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

pub(crate) fn range((lo, hi): (u64, u64)) -> String {
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    }
}

pub(crate) fn min_max(v: &[u64]) -> (u64, u64) {
    (
        v.iter().copied().min().unwrap_or(0),
        v.iter().copied().max().unwrap_or(0),
    )
}
