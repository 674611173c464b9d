//! Wakes against AgentKit's own time (docs/wake-protocol.md, "AgentKit keeps its own time"):
//! a newest snapshot still being made, one that failed or never finishes, a session stuck
//! starting, a session in a status nobody documented. Each through the resume handler, on
//! DynamoDB Local, against the simulator.

use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::types::{CreateSessionSnapshot, DeleteSession};
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::AgentStore;
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_sim::SeedSnapshot;
use snapwake_tests::*;

fn settings() -> WakeSettings {
    WakeSettings {
        lock: quick_lock(Duration::from_secs(5)),
        ready_timeout: Duration::from_secs(3),
        poll_min: Duration::from_millis(50),
        poll_max: Duration::from_millis(200),
        watch_min: Duration::from_millis(25),
        watch_max: Duration::from_millis(100),
        poll_lease: Duration::from_millis(300),
        // More than one AgentKit request timeout (2 s): a Resume is never sent with less left.
        wait: Duration::from_millis(2500),
        ..WakeSettings::default()
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
        let store = dynamo_store(test).await;
        let world = World::start(Duration::ZERO).await;
        world.register(&store).await;
        let resume = Resume {
            store: store.clone(),
            agentkit: world.client(),
            registry: RegistryCache::new(ToolOverrides::default()),
            identity: identity(),
            wake,
        };
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
        let until = std::time::Instant::now() + patience;
        loop {
            let (status, body) = self.resume(agent_id, None).await;
            if status != 202 || std::time::Instant::now() > until {
                return (status, body);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
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
        let agent_id = snapwake::identity::usid::mint("alice");
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

/// The repro of a lost day: the session just ended, its snapshot is still `Creating`, an older
/// one is Ready. The wake waits (202, `SNAPSHOT_IN_PROGRESS`) instead of waking the older one,
/// then wakes from the new one once it is Ready.
#[tokio::test]
async fn a_wake_waits_for_the_newest_snapshot_and_then_wakes_from_it() {
    let env = Env::start("snapshot-in-progress", settings()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    // The last session: alive until moments ago, its snapshot still being made.
    let last = env.world.live_session("alice", &agent_id);
    ctl.set_snapshot_ready_delay(Duration::from_secs(3));
    let kit = env.world.client();
    let taken = kit
        .call(
            REGION,
            &CreateSessionSnapshot {
                session_id: last.clone(),
                tool_id: env.world.recoverable.clone(),
            },
            Env::deadline(),
        )
        .await
        .unwrap();
    kit.call(
        REGION,
        &DeleteSession {
            tool_id: env.world.recoverable.clone(),
            session_id: last,
        },
        Env::deadline(),
    )
    .await
    .unwrap();
    ctl.reset_counters();

    let (status, body) = env.resume(&agent_id, None).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["state"], "waking", "{body}");
    assert_eq!(body["wake"]["reason"], "SNAPSHOT_IN_PROGRESS", "{body}");
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 0);

    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(15))
        .await;
    assert_eq!(status, 200, "{body}");
    let counters = ctl.counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 1);
    assert_eq!(
        counters.resumes_of(&taken.snapshot_id),
        1,
        "woken from the newest"
    );
    assert_eq!(counters.resumes_of(&older), 0, "never from the older one");
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}

/// A newest snapshot that failed is passed over: the newest Ready one wakes.
#[tokio::test]
async fn a_failed_newest_snapshot_falls_back_to_the_newest_ready_one() {
    let env = Env::start("snapshot-failed", settings()).await;
    let (agent_id, older) = env.world.asleep_agent("alice", "Fallback");
    let ctl = env.world.sim.control();
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: env.world.recoverable.clone(),
        user_session_id: Some(agent_id.clone()),
        session_id: Some("s-failed".into()),
        status: Some("Failed".into()),
        created_at: Some(time::OffsetDateTime::now_utc() + Duration::from_secs(60)),
        ..SeedSnapshot::default()
    })
    .unwrap();
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(10))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ctl.counters().resumes_of(&older), 1);
}

/// A newest snapshot `Creating` for longer than the snapshot timeout fails the wake, naming
/// it (502 `SNAPSHOT_STUCK`); the owner can still wake the older one by name.
#[tokio::test]
async fn a_snapshot_stuck_creating_fails_the_wake_and_an_older_one_wakes_by_name() {
    let env = Env::start("snapshot-stuck", settings()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3 * 3600));
    let ctl = env.world.sim.control();
    let stuck = ctl
        .seed_snapshot(SeedSnapshot {
            tool_id: env.world.recoverable.clone(),
            user_session_id: Some(agent_id.clone()),
            session_id: Some("s-stuck".into()),
            status: Some("Creating".into()),
            created_at: Some(time::OffsetDateTime::now_utc() - Duration::from_secs(7200)),
            ..SeedSnapshot::default()
        })
        .unwrap();
    let (status, body) = env.resume(&agent_id, None).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["code"], "SNAPSHOT_STUCK", "{body}");
    assert!(body["detail"].as_str().unwrap().contains(&stuck), "{body}");
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 0);
    let record = env.record(&agent_id).await;
    assert_eq!(record.state, WakeState::Failed);

    let named = format!(r#"{{"snapshot_id":"{older}"}}"#);
    let (status, body) = env.resume(&agent_id, Some(&named)).await;
    assert!(status == 200 || status == 202, "{status} {body}");
    assert_eq!(ctl.counters().resumes_of(&older), 1);
}

/// The repro of "202 forever": a resumed session that never leaves `Creating`. Once the
/// readiness timeout has passed the wake fails cleanly (502 `SESSION_STUCK`, retryable), and
/// the next wake ends the stuck session before it resumes again: never two sandboxes.
#[tokio::test]
async fn a_session_stuck_starting_fails_at_the_readiness_timeout_and_is_ended_before_the_next_wake()
{
    let env = Env::start("session-stuck", settings()).await;
    let (agent_id, snapshot) = env.world.asleep_agent("alice", "Slow");
    let ctl = env.world.sim.control();
    ctl.set_session_ready_delay(Duration::from_secs(3600));

    let started = std::time::Instant::now();
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(20))
        .await;
    let took = started.elapsed();
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["code"], "SESSION_STUCK", "{body}");
    assert_eq!(body["retryable"], true, "{body}");
    // Readiness timeout (3 s) + skew margin, and no more than a few polls past it.
    assert!(took < Duration::from_secs(10), "answered after {took:?}");
    let record = env.record(&agent_id).await;
    assert_eq!(record.state, WakeState::Failed);
    let stuck = record
        .session_id
        .clone()
        .expect("the stuck session is kept");
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 1);

    // AgentKit works again: the next wake ends the stuck session, then resumes.
    ctl.set_session_ready_delay(Duration::ZERO);
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(10))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(session_of(&body), stuck);
    let counters = ctl.counters();
    assert_eq!(counters.received("DeleteSession"), 1);
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 2);
    assert_eq!(counters.resumes_of(&snapshot), 2);
    assert_eq!(
        counters.live_sessions_of(&agent_id),
        1,
        "never two sandboxes"
    );
    assert!(ctl.session(&stuck).is_none(), "the stuck session was ended");
}

/// The repro of a second sandbox: a session in a status nobody documented (`Paused`) is
/// neither woken beside nor taken for awake: 502 `PROVIDER_ERROR` naming the status, no
/// Resume, and the view shows `state: unknown` with the raw status.
#[tokio::test]
async fn a_session_in_an_unknown_status_is_never_woken_beside() {
    let env = Env::start("unknown-status", settings()).await;
    let (agent_id, _) = env.world.asleep_agent("alice", "Odd");
    let ctl = env.world.sim.control();
    ctl.seed_session(snapwake_sim::SeedSession {
        tool_id: env.world.recoverable.clone(),
        user_session_id: Some(agent_id.clone()),
        status: Some("Paused".into()),
        ..Default::default()
    })
    .unwrap();
    for _ in 0..2 {
        let (status, body) = env.resume(&agent_id, None).await;
        assert_eq!(status, 502, "{body}");
        assert_eq!(body["code"], "PROVIDER_ERROR", "{body}");
        assert_eq!(body["retryable"], true, "{body}");
        assert!(
            body["detail"].as_str().unwrap().contains("Paused"),
            "{body}"
        );
    }
    let counters = ctl.counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 0);
    assert_eq!(counters.live_sessions_of(&agent_id), 1);

    let api = Api::new(env.store.clone(), env.world.client(), identity());
    let resp = api
        .handle(request(
            "GET",
            &format!("/v1/agents/codex/{agent_id}"),
            Who::User("alice"),
            None,
        ))
        .await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["state"], "unknown", "{view}");
    assert_eq!(view["session"]["status"], "Paused", "{view}");
}

/// One poller per agent: however many callers keep asking while a session takes its time, the
/// agent draws at most about one GetSession per poll interval (the holder, then whoever holds
/// the short poll lease), and every caller is answered within its wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_callers_of_a_slow_session_draw_one_poller_not_one_each() {
    let wake = WakeSettings {
        poll_min: Duration::from_millis(500),
        poll_max: Duration::from_secs(1),
        poll_lease: Duration::from_secs(2),
        ready_timeout: Duration::from_secs(30),
        ..settings()
    };
    let env = std::sync::Arc::new(Env::start("one-poller", wake).await);
    let (agent_id, _) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    ctl.set_session_ready_delay(Duration::from_secs(3600));

    let run_for = Duration::from_secs(6);
    let started = std::time::Instant::now();
    let callers: Vec<_> = (0..60)
        .map(|_| {
            let env = env.clone();
            let agent_id = agent_id.clone();
            tokio::spawn(async move {
                let mut slowest = Duration::ZERO;
                while started.elapsed() < run_for {
                    let asked = std::time::Instant::now();
                    let (status, body) = env.resume(&agent_id, None).await;
                    slowest = slowest.max(asked.elapsed());
                    assert_eq!(status, 202, "{body}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                slowest
            })
        })
        .collect();
    let mut slowest = Duration::ZERO;
    for c in callers {
        slowest = slowest.max(c.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let counters = ctl.counters();
    let polls = counters.received("GetSession");
    // One poll per 0.5 s at most, whoever polls, plus a takeover's first look now and then.
    let bound = (elapsed * 2.0).ceil() as u64 + 4;
    assert!(
        polls <= bound,
        "{polls} GetSession in {elapsed:.1} s from 60 callers (bound {bound})"
    );
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 1);
    // Each answered within its wait (2.5 s) and a margin.
    assert!(
        slowest < Duration::from_secs(4),
        "slowest answer {slowest:?}"
    );
}

/// A sleep asked of an agent whose session is in a status nobody documented neither snapshots
/// nor ends it: 502 naming the status, nothing sent.
#[tokio::test]
async fn a_session_in_an_unknown_status_is_not_put_to_sleep() {
    let env = Env::start("unknown-status-sleep", settings()).await;
    let (agent_id, _) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    ctl.seed_session(snapwake_sim::SeedSession {
        tool_id: env.world.recoverable.clone(),
        user_session_id: Some(agent_id.clone()),
        status: Some("Paused".into()),
        ..Default::default()
    })
    .unwrap();
    let path = format!("/v1/agents/codex/{agent_id}/sleep");
    let resp = env
        .resume
        .handle(request("POST", &path, Who::User("alice"), None))
        .await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 502, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("Paused"),
        "{body}"
    );
    let counters = ctl.counters();
    assert_eq!(counters.received("CreateSessionSnapshot"), 0);
    assert_eq!(counters.received("DeleteSession"), 0);
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}

/// A Resume whose answer was lost (500) and which AgentKit applies 1.5 s later: every caller
/// reconciles by listing inside the readiness window and adopts the late session; nobody sends
/// a second Resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_resume_applied_late_is_adopted_never_sent_twice() {
    let env = std::sync::Arc::new(Env::start("resume-late", settings()).await);
    let (agent_id, snapshot) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    ctl.inject(
        snapwake_sim::Fault::error(Some("ResumeSessionFromSnapshot"), "InternalError", 500)
            .next(1)
            .apply_after(Duration::from_millis(1500)),
    )
    .unwrap();
    let callers: Vec<_> = (0..10)
        .map(|_| {
            let env = env.clone();
            let agent_id = agent_id.clone();
            tokio::spawn(async move {
                env.resume_until_settled(&agent_id, Duration::from_secs(20))
                    .await
            })
        })
        .collect();
    let mut sessions = std::collections::BTreeSet::new();
    for c in callers {
        let (status, body) = c.await.unwrap();
        assert_eq!(status, 200, "{body}");
        sessions.insert(session_of(&body));
    }
    let counters = ctl.counters();
    assert_eq!(
        counters.late_applied.get("ResumeSessionFromSnapshot"),
        Some(&1)
    );
    assert_eq!(
        counters.received("ResumeSessionFromSnapshot"),
        1,
        "never a second"
    );
    assert_eq!(counters.resumes_of(&snapshot), 1);
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
    assert_eq!(sessions.len(), 1, "one session for everybody: {sessions:?}");
}

/// The simulator's realistic expiry: the session of an awake agent expires and its snapshot
/// takes a few seconds. The next wake waits for it and wakes from it, not from the older one.
#[tokio::test]
async fn after_an_expiry_the_wake_uses_the_new_snapshot_once_it_is_ready() {
    let env = Env::start("expiry-realistic", roomy()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(10))
        .await;
    assert_eq!(status, 200, "{body}");
    let first = session_of(&body);
    // Eight hours on: the session expires; its snapshot is Creating for 3 s (the default).
    ctl.advance(Duration::from_secs(8 * 3600 + 1));
    tokio::time::sleep(Duration::from_millis(1100)).await; // past the verified-awake second
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(15))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(session_of(&body), first);
    let newest = ctl
        .snapshots()
        .into_iter()
        .find(|s| s.session_id.as_deref() == Some(first.as_str()))
        .and_then(|s| s.snapshot_id)
        .expect("the expired session's snapshot");
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&newest), 1, "woken from the newest");
    assert_eq!(
        counters.resumes_of(&older),
        1,
        "the older one only for the first wake"
    );
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}

/// A snapshot AgentKit does not even list yet: the agent's last session expired moments ago
/// (within `SNAPWAKE_SNAPSHOT_GRACE_S`), so the wake waits for its snapshot to appear instead
/// of waking the older one.
#[tokio::test]
async fn a_snapshot_missing_from_listings_just_after_expiry_is_waited_for() {
    let env = Env::start("expiry-hidden", roomy()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    ctl.set_expiry_snapshot_hidden(Duration::from_secs(2));
    // The agent is awake on a session about to expire (on both clocks: no jump).
    let last = ctl
        .seed_session(snapwake_sim::SeedSession {
            tool_id: env.world.recoverable.clone(),
            user_session_id: Some(agent_id.clone()),
            ttl_secs: Some(2),
            metadata: vec![snapwake::agentkit::types::MetadataEntry::string(
                "Username", "alice",
            )],
            ..Default::default()
        })
        .unwrap();
    let (status, body) = env.resume(&agent_id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(session_of(&body), last);
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(15))
        .await;
    assert_eq!(status, 200, "{body}");
    let newest = ctl
        .snapshots()
        .into_iter()
        .find(|s| s.session_id.as_deref() == Some(last.as_str()))
        .and_then(|s| s.snapshot_id)
        .expect("the expired session's snapshot");
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&newest), 1, "woken from the newest");
    assert_eq!(counters.resumes_of(&older), 0, "never from the older one");
}

/// A newest expiry snapshot that ends `Failed` (the simulator's outcome setting): the wake
/// falls back to the newest Ready one.
#[tokio::test]
async fn an_expiry_snapshot_that_fails_falls_back_to_the_newest_ready_one() {
    let env = Env::start("expiry-failed", roomy()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    let (status, _) = env
        .resume_until_settled(&agent_id, Duration::from_secs(10))
        .await;
    assert_eq!(status, 200);
    ctl.set_expiry_snapshot_outcome("Failed");
    ctl.advance(Duration::from_secs(8 * 3600 + 10));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(15))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ctl.counters().resumes_of(&older), 2);
}

/// The simulator's stuck sessions (`stuck_sessions`), end to end: the wake fails at the
/// readiness timeout and the next one ends the stuck session before resuming.
#[tokio::test]
async fn a_session_the_simulator_keeps_starting_fails_cleanly_then_is_replaced() {
    let env = Env::start("stuck-sim", settings()).await;
    let (agent_id, snapshot) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    ctl.set_stuck_sessions(1);
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(20))
        .await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["code"], "SESSION_STUCK", "{body}");
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(10))
        .await;
    assert_eq!(status, 200, "{body}");
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&snapshot), 2);
    assert_eq!(counters.received("DeleteSession"), 1);
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}
