//! The delete function end to end: API Gateway v2 requests into the handler, the agent's lock
//! on DynamoDB Local (one case also in memory), AgentKit simulated over HTTP — and races of
//! deletes against resumes, many rounds each.

use std::sync::Arc;
use std::time::Duration;

use snapwake::ambient::{now_ms, now_s};
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::store::memory::MemoryStore;
use snapwake::store::AgentStore;
use snapwake::wake::WakeSettings;
use snapwake_tests::*;

/// Short polls and leases that still cover a delete's work.
fn quick() -> WakeSettings {
    quick_wake()
}

fn agent_path(agent_id: &str) -> String {
    format!("/v1/agents/codex/{agent_id}")
}

fn snapshot_path(agent_id: &str, snapshot_id: &str) -> String {
    format!("/v1/agents/codex/{agent_id}/snapshots/{snapshot_id}")
}

fn resume_path(agent_id: &str) -> String {
    format!("/v1/agents/codex/{agent_id}/resume")
}

fn key(agent_id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, agent_id)
}

/// Hold `agent_id` as a live wake would (no AgentKit involved).
async fn hold_as_waking<S: AgentStore + snapwake::store::ScheduleStore>(store: &S, agent_id: &str) {
    hold(
        store,
        agent_id,
        WakeState::Waking,
        "waker",
        now_ms() + 60_000,
    )
    .await;
}

mod snapshot_delete;
mod agent_delete;
mod authorization_and_bad_input;
mod races;
mod forced_interleavings;
