//! Wakes against AgentKit's own time (docs/wake-protocol.md, "AgentKit keeps its own time"):
//! a newest snapshot still being made, one that failed or never finishes, a session stuck
//! starting, a session in a status nobody documented. Each through the resume handler, on
//! DynamoDB Local, against the simulator.

use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::types::{CreateSessionSnapshot, DeleteSession};
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::invocation::Deadline;
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::AgentStore;
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_sim::SeedSnapshot;
use snapwake_tests::*;

fn settings() -> WakeSettings {
    // A wait of more than one AgentKit request timeout (2 s): a Resume is never sent with less
    // left.
    let wait = Duration::from_millis(2500);
    WakeSettings {
        poll_lease: Duration::from_millis(300),
        ..wake_settings(Duration::from_secs(5), Duration::from_secs(3), wait)
    }
}

/// [`settings`] with room for the reconcile, a listing and a Resume after a wait (a short wait
/// answers 503 `TRY_AGAIN` before it would send Resume with less than a request timeout left).
fn roomy() -> WakeSettings {
    WakeSettings {
        wait: Duration::from_secs(5),
        ..settings()
    }
}

struct Env {
    world: World,
    store: DynamoStore,
    resume: Resume<DynamoStore, snapwake::agentkit::AgentKitClient>,
}

impl Env {
    async fn start(test: &str, wake: WakeSettings) -> Env {
        let (store, world, _) = deployed(test, Duration::ZERO).await;
        let resume = resume_fn(store.clone(), world.client(), wake);
        Env {
            world,
            store,
            resume,
        }
    }

    async fn resume(&self, agent_id: &str, body: Option<&str>) -> (u16, Value) {
        let path = format!("/v1/agents/codex/{agent_id}/resume");
        let resp = self
            .resume
            .handle(request("POST", &path, Who::User("alice"), body))
            .await;
        answer(&resp)
    }

    /// Resume until the answer is not 202 or `patience` runs out; the last answer.
    async fn resume_until_settled(&self, agent_id: &str, patience: Duration) -> (u16, Value) {
        settle_alices(&self.resume, agent_id, "resume", patience).await
    }

    async fn record(&self, agent_id: &str) -> snapwake::domain::AgentRecord {
        self.store
            .get(&AgentKey::new(Kind::Codex, agent_id))
            .await
            .unwrap()
            .expect("a record")
    }

    fn deadline() -> Deadline {
        Deadline::after(Duration::from_secs(5))
    }

    /// An asleep agent of alice whose one Ready snapshot is `age` old. (agent id, snapshot id)
    fn asleep_since(&self, age: Duration) -> (String, String) {
        let agent_id = snapwake::identity::caller::mint("alice");
        let snapshot = self
            .world
            .sim
            .control()
            .seed_snapshot(SeedSnapshot {
                tool_id: self.world.recoverable.clone(),
                user_session_id: Some(agent_id.clone()),
                session_id: Some("s-before".into()),
                created_at: Some(time::OffsetDateTime::now_utc() - age),
                session_metadata: vec![snapwake::agentkit::types::MetadataEntry::string(
                    "Username", "alice",
                )],
                ..SeedSnapshot::default()
            })
            .unwrap();
        (agent_id, snapshot)
    }
}

fn session_of(body: &Value) -> String {
    body["session"]["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

mod snapshots;
mod sessions;
