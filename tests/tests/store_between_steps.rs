//! The store can fail between steps (docs/wake-protocol.md, step 6): the fenced write that
//! records `resume_sent_at` lands, its answer is lost, and the re-read that would settle it
//! fails too. The holder never sent Resume, so it must not leave the agent waiting out the
//! readiness timeout on a Resume that never was: it takes the marker back, answers 503, and the
//! next caller wakes the agent with one Resume.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::Value;
use snapwake::domain::{AgentKey, AgentRecord, Kind, ToolRegistry, WakeState};
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::{
    AgentStore, Changes, Condition, Document, DocumentKey, OwnerPage, StoreError,
};
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_tests::*;

/// DynamoDB Local, with the marker write's answer lost on every attempt the lock makes (each
/// lands) and the reads that follow failing.
struct LosesTheMarker {
    inner: DynamoStore,
    /// Marker writes still to lose (their write lands).
    lose: AtomicU32,
    /// Reads still to fail after a lost marker.
    fail_reads: AtomicU32,
    reads_after: u32,
}

impl LosesTheMarker {
    fn new(inner: DynamoStore, reads_after: u32) -> Self {
        LosesTheMarker {
            inner,
            // The lock sends an ambiguous fenced write up to `write_attempts` times.
            lose: AtomicU32::new(snapwake::lock::LockSettings::default().write_attempts),
            fail_reads: AtomicU32::new(0),
            reads_after,
        }
    }
}

fn take(counter: &AtomicU32) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

impl AgentStore for LosesTheMarker {
    async fn get(&self, key: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
        if take(&self.fail_reads) {
            return Err(StoreError::Unavailable(
                "injected: the read timed out".into(),
            ));
        }
        self.inner.get(key).await
    }

    async fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> Result<AgentRecord, StoreError> {
        let marker = matches!(condition, Condition::Held { .. })
            && matches!(changes.resume_sent_at_ms, Some(Some(_)));
        if marker && take(&self.lose) {
            let _ = self.inner.update(key, condition, changes).await;
            self.fail_reads.store(self.reads_after, Ordering::SeqCst);
            return Err(StoreError::Unavailable(
                "injected: the answer was lost".into(),
            ));
        }
        self.inner.update(key, condition, changes).await
    }

    async fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<OwnerPage, StoreError> {
        self.inner.query_owner(owner_key, limit, cursor).await
    }

    async fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> Result<snapwake::store::AgentPage, StoreError> {
        self.inner.scan_agents(kind, limit, after).await
    }

    async fn get_registry(&self) -> Result<Option<ToolRegistry>, StoreError> {
        self.inner.get_registry().await
    }

    async fn get_document(&self, key: DocumentKey<'_>) -> Result<Option<Document>, StoreError> {
        self.inner.get_document(key).await
    }

    async fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> Result<Document, StoreError> {
        self.inner
            .put_document(key, value, expected_version, expires_at)
            .await
    }

    async fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> Result<ToolRegistry, StoreError> {
        self.inner.put_registry(registry, expected_version).await
    }
}

fn settings() -> WakeSettings {
    WakeSettings {
        lock: quick_lock(Duration::from_secs(60)),
        // The default readiness timeout: a marker left behind would hold callers for minutes.
        ready_timeout: Duration::from_secs(360),
        poll_min: Duration::from_millis(50),
        poll_max: Duration::from_millis(200),
        watch_min: Duration::from_millis(25),
        watch_max: Duration::from_millis(100),
        wait: Duration::from_secs(4),
        ..WakeSettings::default()
    }
}

async fn scenario(reads_after: u32) {
    let store = dynamo_store("marker-lost").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, snapshot) = world.asleep_agent("alice", "Marker");
    let resume = Resume {
        store: LosesTheMarker::new(store.clone(), reads_after),
        agentkit: world.client(),
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        wake: settings(),
    };
    let path = format!("/v1/agents/codex/{agent_id}/resume");
    let call = || resume.handle(request("POST", &path, Who::User("alice"), None));
    let ctl = world.sim.control();

    let (status, body) = answer(&call().await);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["retryable"], true, "{body}");
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 0);
    let key = AgentKey::new(Kind::Codex, &agent_id);
    let record = store.get(&key).await.unwrap().expect("a record");
    assert_eq!(record.state, WakeState::Asleep, "{record:?}");
    assert!(
        record.resume_sent_at_ms.is_none(),
        "marker taken back: {record:?}"
    );

    // The next caller wakes the agent (once the table answers its reads again): no six minutes
    // of 202 on a Resume never sent.
    let (mut status, mut body) = answer(&call().await);
    for _ in 0..reads_after {
        if status != 503 {
            break;
        }
        (status, body) = answer(&call().await);
    }
    assert_eq!(status, 200, "{body}");
    let counters = ctl.counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 1);
    assert_eq!(counters.resumes_of(&snapshot), 1);
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}

#[tokio::test]
async fn a_lost_resume_marker_whose_reread_fails_is_taken_back_not_waited_out() {
    // The write's own re-read fails (the lock re-reads to settle an ambiguous write).
    scenario(1).await;
}

#[tokio::test]
async fn a_lost_resume_marker_whose_rereads_keep_failing_is_still_taken_back() {
    // Every re-read of that write fails; the take-back itself is fenced and needs none.
    scenario(3).await;
}
