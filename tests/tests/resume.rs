//! The resume function end to end: API Gateway v2 requests into the handler, the wake lock on
//! DynamoDB Local (and the in-memory store), AgentKit simulated over HTTP.
//!
//! The storm spreads 500 resumes of one agent over threads of this process and over two child
//! processes (this same test binary, re-run in child mode), all sharing one table and one
//! simulator: exactly one ResumeSessionFromSnapshot may reach AgentKit.

use std::future::Future;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use snapwake::agentkit::types::Action;
use snapwake::agentkit::{AgentKit, AgentKitClient, AgentKitError};
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::memory::MemoryStore;
use snapwake::store::{AgentStore, Changes, Condition};
use snapwake::timestamp::now_ms;
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_sim::{Fault, SeedSnapshot};
use snapwake_tests::*;
use tokio::sync::Notify;

fn resume_fn<S: AgentStore, K: AgentKit>(
    store: S,
    agentkit: K,
    wake: WakeSettings,
) -> Resume<S, K> {
    Resume {
        store,
        agentkit,
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        wake,
    }
}

fn path(agent_id: &str) -> String {
    format!("/v1/agents/codex/{agent_id}/resume")
}

/// Short leases so the crash tests do not wait a minute for an expiry.
fn quick() -> WakeSettings {
    WakeSettings {
        lock: quick_lock(Duration::from_millis(500)),
        ready_timeout: Duration::from_millis(1500),
        poll_min: Duration::from_millis(50),
        poll_max: Duration::from_millis(200),
        watch_min: Duration::from_millis(25),
        watch_max: Duration::from_millis(100),
        poll_lease: Duration::from_millis(300),
        wait: Duration::from_secs(5),
        ..WakeSettings::default()
    }
}

fn session_id(body: &serde_json::Value) -> String {
    body["session"]["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// Storms: 500 callers of a first wake, and 3 generations of 200 callers each

const STORM_PARENT: usize = 200;
const STORM_CHILDREN: usize = 2;
const STORM_PER_CHILD: usize = 150;
/// Most AgentKit calls one storm may cost, whatever its callers (docs/architecture.md, "Quality
/// bars and where they are checked").
const STORM_AGENTKIT_BUDGET: u64 = 15;

/// One caller: resume until it answers anything but 202 (a 202 is asked again after a short
/// pause, as a client honouring `Retry-After` would, only faster), for at most `patience`.
/// Answers the final (status, session id) and how many 202s came first.
async fn resume_until_settled<S: AgentStore, K: AgentKit>(
    function: &Resume<S, K>,
    agent_id: &str,
    patience: Duration,
) -> (u16, String, u32) {
    let until = std::time::Instant::now() + patience;
    let mut waiting = 0;
    loop {
        let resp = function
            .handle(request("POST", &path(agent_id), Who::User("alice"), None))
            .await;
        let (status, body) = answer(&resp);
        if status != 202 || std::time::Instant::now() > until {
            return (status, session_id(&body), waiting);
        }
        waiting += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Run `count` concurrent callers of `agent_id`, each resuming until settled.
async fn storm<S: AgentStore + 'static, K: AgentKit>(
    function: Arc<Resume<S, K>>,
    agent_id: &str,
    count: usize,
) -> Vec<(u16, String)> {
    let tasks: Vec<_> = (0..count)
        .map(|_| {
            let function = function.clone();
            let agent_id = agent_id.to_string();
            tokio::spawn(async move {
                let (status, sid, _) =
                    resume_until_settled(&function, &agent_id, Duration::from_secs(30)).await;
                (status, sid)
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn wait_until(epoch_ms: u64) -> impl Future<Output = ()> {
    let now = now_ms();
    tokio::time::sleep(Duration::from_millis(epoch_ms.saturating_sub(now)))
}

/// A storm over this process (`parent` callers) and `children` child processes (this test
/// binary re-run in child mode, `per_child` callers each), all starting at the same instant
/// against one table and one simulator. Answers every caller's (status, session id).
async fn storm_across_processes(
    function: Arc<Resume<snapwake::store::dynamo::DynamoStore, snapwake::agentkit::AgentKitClient>>,
    world: &World,
    table: &str,
    agent_id: &str,
    parent: usize,
    children: usize,
    per_child: usize,
) -> Vec<(u16, String)> {
    let start_at = now_ms() + 1500;
    let spawned: Vec<_> = (0..children)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args(["storm_child", "--exact", "--nocapture", "--test-threads=1"])
                .env("SNAPWAKE_STORM_CHILD", "1")
                .env("STORM_ENDPOINT", world.sim.endpoint())
                .env("STORM_TABLE", table)
                .env("STORM_AGENT", agent_id)
                .env("STORM_COUNT", per_child.to_string())
                .env("STORM_START_AT_MS", start_at.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_until(start_at).await;
    let mut answers = storm(function, agent_id, parent).await;
    for child in spawned {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        assert!(out.status.success(), "a storm child failed");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<(u16, String)> = text
            .lines()
            // libtest prints "test storm_child ... " before the first line of output.
            .filter_map(|l| l.find("ANSWER ").map(|i| &l[i + "ANSWER ".len()..]))
            .map(|l| {
                let (status, sid) = l.split_once(' ').unwrap_or((l, ""));
                (status.parse().unwrap(), sid.to_string())
            })
            .collect();
        assert_eq!(lines.len(), per_child, "every child caller answered");
        answers.extend(lines);
    }
    answers
}

/// Every caller answered 200 with one and the same session: that session.
fn one_session_for_everybody(answers: &[(u16, String)]) -> String {
    let refused: Vec<_> = answers.iter().filter(|(s, _)| *s != 200).take(3).collect();
    assert!(refused.is_empty(), "all 200: {refused:?}");
    let first = answers[0].1.clone();
    assert!(!first.is_empty());
    assert!(
        answers.iter().all(|(_, sid)| *sid == first),
        "one session for everybody"
    );
    first
}

/// Every AgentKit request the simulator received.
fn agentkit_calls(ctl: &snapwake_sim::SimControl) -> u64 {
    ctl.counters().actions.values().map(|a| a.received).sum()
}

fn storm_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn storm_of_500_resumes_over_threads_and_processes_sends_one_resume() {
    if std::env::var_os("SNAPWAKE_STORM_CHILD").is_some() {
        return;
    }
    storm_runtime().block_on(async {
        let store = dynamo_store("storm").await;
        let table = store.table().to_string();
        let world = World::start(Duration::from_millis(1500)).await;
        world.register(&store).await;
        let (agent_id, snapshot_id) = world.asleep_agent("alice", "Storm");
        let ctl = world.sim.control();
        ctl.reset_counters();

        let function = Arc::new(resume_fn(store, world.client(), WakeSettings::default()));
        let answers = storm_across_processes(
            function,
            &world,
            &table,
            &agent_id,
            STORM_PARENT,
            STORM_CHILDREN,
            STORM_PER_CHILD,
        )
        .await;
        assert_eq!(
            answers.len(),
            STORM_PARENT + STORM_CHILDREN * STORM_PER_CHILD
        );
        one_session_for_everybody(&answers);
        let counters = ctl.counters();
        assert_eq!(counters.received("ResumeSessionFromSnapshot"), 1);
        assert_eq!(counters.resumes_of(&snapshot_id), 1);
        assert_eq!(counters.live_sessions_of(&agent_id), 1);
        assert!(ctl.snapshot(&snapshot_id).is_some(), "snapshot kept");
        // Joiners watch the record, not AgentKit: the storm's cost does not grow with it.
        let calls = agentkit_calls(&ctl);
        assert!(
            calls <= STORM_AGENTKIT_BUDGET,
            "{calls} AgentKit calls for one storm: {:?}",
            counters.actions
        );
        // Only the winner located the agent (one listing of its snapshots in all).
        assert_eq!(counters.received("ListSessionSnapshots"), 1);
    });
}

/// An agent is woken many times in its life. Three generations: each storm of 200 callers
/// (this process and two children) wakes it once, every caller answers that generation's one
/// session, then the simulated clock runs 8 hours, the session expires into a new snapshot,
/// and the next generation starts from a record that still names the expired session.
#[test]
fn every_generation_of_storms_gets_its_own_one_session_across_processes() {
    if std::env::var_os("SNAPWAKE_STORM_CHILD").is_some() {
        return;
    }
    storm_runtime().block_on(async {
        let store = dynamo_store("generations").await;
        let table = store.table().to_string();
        let world = World::start(Duration::from_millis(1500)).await;
        world.register(&store).await;
        let (agent_id, _) = world.asleep_agent("alice", "Phoenix");
        let function = Arc::new(resume_fn(store, world.client(), WakeSettings::default()));
        generations(&world, &agent_id, |agent_id| {
            let function = function.clone();
            let table = table.clone();
            let world = &world;
            async move {
                storm_across_processes(function, world, &table, &agent_id, 100, 2, 50).await
            }
        })
        .await;
    });
}

/// The same three generations on the in-memory store (one process, 200 callers each).
#[test]
fn every_generation_of_storms_gets_its_own_one_session_in_memory() {
    storm_runtime().block_on(async {
        let store = Arc::new(MemoryStore::new());
        let world = World::start(Duration::from_millis(1500)).await;
        world.register(&store).await;
        let (agent_id, _) = world.asleep_agent("alice", "Phoenix");
        let function = Arc::new(resume_fn(store, world.client(), WakeSettings::default()));
        generations(&world, &agent_id, |agent_id| {
            let function = function.clone();
            async move { storm(function, &agent_id, 200).await }
        })
        .await;
    });
}

/// Three storms of `agent_id`, the simulated clock run past the session's expiry between
/// them; every generation's invariants asserted.
async fn generations<F, Fut>(world: &World, agent_id: &str, mut storm_of: F)
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Vec<(u16, String)>>,
{
    let ctl = world.sim.control();
    let mut seen: Vec<String> = Vec::new();
    for generation in 0..3u64 {
        let calls_before = agentkit_calls(&ctl);
        let answers = storm_of(agent_id.to_string()).await;
        assert_eq!(answers.len(), 200);
        let session = one_session_for_everybody(&answers);
        assert!(
            !seen.contains(&session),
            "generation {generation} answered an earlier generation's session"
        );
        seen.push(session.clone());
        let counters = ctl.counters();
        assert_eq!(
            counters.received("ResumeSessionFromSnapshot"),
            generation + 1,
            "exactly one Resume in generation {generation}"
        );
        assert_eq!(counters.live_sessions_of(agent_id), 1);
        let calls = agentkit_calls(&ctl) - calls_before;
        assert!(
            calls <= STORM_AGENTKIT_BUDGET,
            "generation {generation}: {calls} AgentKit calls"
        );
        assert!(ctl
            .session(&session)
            .is_some_and(|s| s.status.as_deref() == Some("Ready")));
        // Eight hours later the session has expired into one more snapshot. (Real time
        // passes too: an awake record is trusted without asking AgentKit for one second.)
        ctl.advance(Duration::from_secs(8 * 3600 + 60));
        assert_eq!(ctl.counters().live_sessions_of(agent_id), 0);
        assert_eq!(world.snapshots_of(agent_id).len() as u64, generation + 2);
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
}

/// Child mode of the storms: resumes from another OS process against the same table and
/// simulator, one `ANSWER <status> <session>` line per caller.
#[test]
fn storm_child() {
    let Some(_) = std::env::var_os("SNAPWAKE_STORM_CHILD") else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = dynamo_table(&var("STORM_TABLE"), false).await;
        let function = Arc::new(resume_fn(
            store,
            client(&var("STORM_ENDPOINT")),
            WakeSettings::default(),
        ));
        wait_until(var("STORM_START_AT_MS").parse().unwrap()).await;
        let answers = storm(
            function,
            &var("STORM_AGENT"),
            var("STORM_COUNT").parse().unwrap(),
        )
        .await;
        for (status, sid) in answers {
            println!("ANSWER {status} {sid}");
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Crashes: a holder stopped dead at each step

/// AgentKit in front of the real client that stops the caller forever at one action, before
/// or after AgentKit acted — what a Lambda killed at that instant looks like. With
/// `after_a_resume`, only a call made after a Resume went through stalls (the polls of the
/// session it recorded, not the check of an earlier one).
struct Stall {
    inner: AgentKitClient,
    action: &'static str,
    after: bool,
    after_a_resume: bool,
    resumed: AtomicBool,
    armed: AtomicBool,
    reached: Notify,
}

impl Stall {
    fn new(inner: AgentKitClient, at: StallAt) -> Self {
        Stall {
            inner,
            action: at.action,
            after: at.after,
            after_a_resume: at.after_a_resume,
            resumed: AtomicBool::new(false),
            armed: AtomicBool::new(true),
            reached: Notify::new(),
        }
    }
}

impl AgentKit for Stall {
    async fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> Result<A::Output, AgentKitError> {
        let eligible = !self.after_a_resume || self.resumed.load(Ordering::SeqCst);
        let stall = A::NAME == self.action && eligible && self.armed.swap(false, Ordering::SeqCst);
        if stall && !self.after {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        let out = self.inner.call(region, request, deadline).await;
        if A::NAME == "ResumeSessionFromSnapshot" {
            self.resumed.store(true, Ordering::SeqCst);
        }
        if stall {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        out
    }

    fn regions(&self) -> &[String] {
        self.inner.regions()
    }

    fn request_timeout(&self) -> std::time::Duration {
        self.inner.request_timeout()
    }
}

/// Where the holder dies.
#[derive(Clone, Copy, Debug)]
struct StallAt {
    action: &'static str,
    after: bool,
    after_a_resume: bool,
}

/// Right after acquiring (and, on a first wake, locating): the reconcile listing of an agent
/// with a UserSessionId, the snapshot listing of a `snapshot-<id>` agent.
const AFTER_ACQUIRE: StallAt = StallAt {
    action: "ListSessions",
    after: false,
    after_a_resume: false,
};
const AFTER_ACQUIRE_SNAPSHOT_AGENT: StallAt = StallAt {
    action: "ListSessionSnapshots",
    after: false,
    after_a_resume: false,
};
/// Between ResumeSessionFromSnapshot (which AgentKit carried out) and recording its SessionId.
const AFTER_RESUME: StallAt = StallAt {
    action: "ResumeSessionFromSnapshot",
    after: true,
    after_a_resume: false,
};
/// After recording the SessionId, at the first readiness poll.
const AFTER_RECORDING: StallAt = StallAt {
    action: "GetSession",
    after: false,
    after_a_resume: true,
};

/// The agent a crash test wakes: one with a UserSessionId (its owner wakes it), or a
/// `snapshot-<id>` agent (a snapshot without one; an admin wakes it).
struct Subject {
    agent_id: String,
    snapshot_id: String,
    who: Who<'static>,
}

impl Subject {
    fn owned(world: &World) -> Subject {
        let (agent_id, snapshot_id) = world.asleep_agent("alice", "Crashy");
        Subject {
            agent_id,
            snapshot_id,
            who: Who::User("alice"),
        }
    }

    fn snapshot_agent(world: &World) -> Subject {
        let snapshot_id = world
            .sim
            .control()
            .seed_snapshot(SeedSnapshot {
                tool_id: world.recoverable.clone(),
                session_id: Some("s-nameless".into()),
                ..SeedSnapshot::default()
            })
            .unwrap();
        Subject {
            agent_id: format!("snapshot-{snapshot_id}"),
            snapshot_id,
            who: Who::Admin("root"),
        }
    }

    /// The agent's live sessions in AgentKit (a `snapshot-<id>` agent's sessions carry no
    /// UserSessionId: every such session on the Tool counts).
    fn live(&self, world: &World) -> usize {
        let ctl = world.sim.control();
        if self.agent_id.starts_with("snapshot-") {
            ctl.sessions()
                .into_iter()
                .filter(|s| s.is_active() && s.user_session_id.is_none())
                .count()
        } else {
            ctl.counters().live_sessions_of(&self.agent_id) as usize
        }
    }

    /// Resume until it answers 200 (a 202 is asked again), at most ~10 s.
    async fn converge<S: AgentStore, K: AgentKit>(&self, f: &Resume<S, K>) -> serde_json::Value {
        let mut last = (0, serde_json::Value::Null);
        for _ in 0..40 {
            last = answer(
                &f.handle(request("POST", &path(&self.agent_id), self.who, None))
                    .await,
            );
            if last.0 == 200 {
                return last.1;
            }
            assert_eq!(last.0, 202, "{:?}", last.1);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("never converged: {:?}", last.1)
    }
}

/// A holder stopped dead at `at`, on a first wake or (`later`) on a wake after the agent was
/// woken and its session expired: the next caller converges with no second Resume, one live
/// session, the snapshot kept.
async fn crash_at(snapshot_agent: bool, later: bool, at: StallAt) {
    crash_at_on(
        Arc::new(dynamo_store("crash").await),
        snapshot_agent,
        later,
        at,
    )
    .await;
}

async fn crash_at_on<S: AgentStore + 'static>(
    store: Arc<S>,
    snapshot_agent: bool,
    later: bool,
    at: StallAt,
) {
    let world = World::start(Duration::from_millis(300)).await;
    world.register(&store).await;
    let subject = if snapshot_agent {
        Subject::snapshot_agent(&world)
    } else {
        Subject::owned(&world)
    };
    let ctl = world.sim.control();
    let next = resume_fn(store.clone(), world.client(), quick());
    if later {
        subject.converge(&next).await;
        ctl.advance(Duration::from_secs(9 * 3600));
        assert_eq!(subject.live(&world), 0, "the first session expired");
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    let resumes_before = ctl.counters().received("ResumeSessionFromSnapshot");

    let stall = Arc::new(Stall::new(world.client(), at));
    let doomed = Arc::new(resume_fn(store.clone(), stall.clone(), quick()));
    let p = path(&subject.agent_id);
    let who = subject.who;
    let holder = tokio::spawn({
        let doomed = doomed.clone();
        async move { doomed.handle(request("POST", &p, who, None)).await }
    });
    tokio::time::timeout(Duration::from_secs(10), stall.reached.notified())
        .await
        .unwrap_or_else(|_| panic!("the holder reached {at:?}"));
    holder.abort();
    let _ = holder.await;

    let body = subject.converge(&next).await;
    let resumes = ctl.counters().received("ResumeSessionFromSnapshot") - resumes_before;
    assert_eq!(
        resumes, 1,
        "one Resume for this wake after a crash at {at:?}"
    );
    assert_eq!(subject.live(&world), 1, "one live session");
    assert!(
        ctl.snapshot(&subject.snapshot_id).is_some(),
        "snapshot kept"
    );
    let record = store
        .get(&AgentKey::new(Kind::Codex, &subject.agent_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, WakeState::Awake);
    assert!(record.holder.is_none());
    assert_eq!(
        record.session_id.as_deref(),
        Some(session_id(&body).as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_dead_after_acquire_is_recovered_by_the_next_caller() {
    crash_at(false, false, AFTER_ACQUIRE).await;
    crash_at(false, true, AFTER_ACQUIRE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_dead_after_resume_is_reconciled_not_resumed_again() {
    crash_at(false, false, AFTER_RESUME).await;
    crash_at(false, true, AFTER_RESUME).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_dead_after_recording_the_session_is_recovered_by_polling() {
    crash_at(false, false, AFTER_RECORDING).await;
    crash_at(false, true, AFTER_RECORDING).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_agents_holder_dead_at_any_step_is_recovered_without_a_second_resume() {
    for later in [false, true] {
        crash_at(true, later, AFTER_ACQUIRE_SNAPSHOT_AGENT).await;
        crash_at(true, later, AFTER_RESUME).await;
        crash_at(true, later, AFTER_RECORDING).await;
    }
}

/// The same crashes on the in-memory store (the local server's table).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_dead_at_any_step_is_recovered_in_memory() {
    for (snapshot_agent, at) in [
        (false, AFTER_ACQUIRE),
        (false, AFTER_RESUME),
        (false, AFTER_RECORDING),
        (true, AFTER_RESUME),
    ] {
        for later in [false, true] {
            crash_at_on(Arc::new(MemoryStore::new()), snapshot_agent, later, at).await;
        }
    }
}

/// The holder recorded its session and died; then the session failed. Whoever comes next and
/// wins the poll lease sees it ended and fails the wake *by anyone*: the agent is wakeable
/// again at once, not after the holder's lease (here 30 s) runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_by_anyone_unsticks_an_agent_whose_holder_died_after_recording() {
    let store = Arc::new(dynamo_store("fail-by-anyone").await);
    let world = World::start(Duration::from_millis(1000)).await;
    world.register(&store).await;
    let subject = Subject::owned(&world);
    let ctl = world.sim.control();
    let settings = WakeSettings {
        ready_timeout: Duration::from_secs(30),
        wait: Duration::from_millis(2500),
        ..quick()
    };
    let stall = Arc::new(Stall::new(world.client(), AFTER_RECORDING));
    let doomed = Arc::new(resume_fn(store.clone(), stall.clone(), settings.clone()));
    let p = path(&subject.agent_id);
    let holder = tokio::spawn({
        let doomed = doomed.clone();
        async move {
            doomed
                .handle(request("POST", &p, Who::User("alice"), None))
                .await
        }
    });
    tokio::time::timeout(Duration::from_secs(10), stall.reached.notified())
        .await
        .expect("the holder recorded its session");
    holder.abort();
    let _ = holder.await;
    let key = AgentKey::new(Kind::Codex, &subject.agent_id);
    let held = store.get(&key).await.unwrap().unwrap();
    let recorded = held.session_id.clone().expect("the session was recorded");
    assert_eq!(held.state, WakeState::Waking);
    assert!(
        held.lease_until_ms > now_ms() + 20_000,
        "held for the readiness timeout"
    );

    // The session fails (AgentKit ends it).
    let client = world.client();
    client
        .call(
            REGION,
            &snapwake::agentkit::types::DeleteSession {
                tool_id: world.recoverable.clone(),
                session_id: recorded.clone(),
            },
            Deadline::after(Duration::from_secs(5)),
        )
        .await
        .unwrap();

    // Once the dead holder's request would have ended, the next caller polls, sees the
    // session gone and fails the wake by anyone.
    tokio::time::sleep(Duration::from_millis(2800)).await;
    let next = resume_fn(store.clone(), world.client(), settings);
    let (status, body) = answer(
        &next
            .handle(request(
                "POST",
                &path(&subject.agent_id),
                Who::User("alice"),
                None,
            ))
            .await,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (502, Some("PROVIDER_ERROR")),
        "{body}"
    );
    let failed = store.get(&key).await.unwrap().unwrap();
    assert_eq!(failed.state, WakeState::Failed);
    assert_eq!(failed.fence, held.fence, "the same wake, failed by anyone");
    assert!(failed.holder.is_none() && failed.lease_until_ms == 0);
    assert!(ctl.snapshot(&subject.snapshot_id).is_some());

    // Wakeable again at once.
    let body = subject.converge(&next).await;
    assert_ne!(session_id(&body), recorded);
    assert_eq!(subject.live(&world), 1);
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 2);
}

// ---------------------------------------------------------------------------------------------
// Faults and slowness, on both store adapters

/// Two ways a wake fails for sure: AgentKit refuses the Resume (throttled through every retry,
/// so it surely did not act), or the resumed session ends before it is Ready. Either way the
/// record says `failed`, the snapshot is untouched, and the next resume wakes the agent with
/// one live session in all.
async fn failed_resume_keeps_the_snapshot<S: AgentStore + Clone>(store: S) {
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let f = resume_fn(store.clone(), world.client(), quick());
    let key = |id: &str| AgentKey::new(Kind::Codex, id);

    // A refusal: 429 on the first attempt and both retries.
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Refused");
    ctl.inject(Fault::error(Some("ResumeSessionFromSnapshot"), "Throttling", 429).next(3))
        .unwrap();
    let (status, body) = answer(
        &f.handle(request("POST", &path(&agent_id), Who::User("alice"), None))
            .await,
    );
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["code"], "PROVIDER_THROTTLED");
    assert_eq!(body["retryable"], true);
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 0);
    assert!(
        ctl.snapshot(&snapshot_id).is_some(),
        "the snapshot is untouched"
    );
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Failed);
    assert!(record.holder.is_none() && record.resume_sent_at_ms.is_none());
    let (status, body) = answer(
        &f.handle(request("POST", &path(&agent_id), Who::User("alice"), None))
            .await,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["resumed"].as_bool(), body["state"].as_str()),
        (Some(true), Some("awake"))
    );
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1);

    // The resumed session is gone at the first poll (AgentKit says NotFound).
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Vanishing");
    ctl.inject(Fault::error(Some("GetSession"), "InvalidResource.NotFound", 404).next(1))
        .unwrap();
    let (status, body) = answer(
        &f.handle(request("POST", &path(&agent_id), Who::User("alice"), None))
            .await,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (502, Some("PROVIDER_ERROR")),
        "{body}"
    );
    assert_eq!(body["retryable"], true);
    assert!(
        ctl.snapshot(&snapshot_id).is_some(),
        "the snapshot is untouched"
    );
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Failed);
    assert!(
        record
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("SESSION_ENDED: ") && e.contains("ended")),
        "the record keeps the code and the reason: {record:?}"
    );
    // A view shows the code and snapwake's words, not the recorded reason.
    let api = Api::new(store.clone(), world.client(), identity());
    let (status, view) = answer(
        &api.handle(request(
            "GET",
            &path(&agent_id).replace("/resume", ""),
            Who::User("alice"),
            None,
        ))
        .await,
    );
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["wake"]["error_code"], "SESSION_ENDED", "{view}");
    assert!(
        view["wake"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("wake it again")
                && !e.contains(record.error.as_deref().unwrap_or("-"))),
        "{view}"
    );
    // Still wakeable; the session AgentKit did start is adopted, not doubled.
    let (status, body) = answer(
        &f.handle(request("POST", &path(&agent_id), Who::User("alice"), None))
            .await,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(ctl.counters().resumes_of(&snapshot_id), 1);
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1);
}

async fn slow_readiness_answers_202_then_200<S: AgentStore + Clone>(store: S) {
    // Readiness takes longer than one request may wait (which still leaves a whole AgentKit
    // request timeout, 2 s here, for the Resume).
    let world = World::start(Duration::from_millis(3500)).await;
    world.register(&store).await;
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Sleepy");
    let settings = WakeSettings {
        wait: Duration::from_millis(2500),
        ready_timeout: Duration::from_secs(8),
        ..quick()
    };
    let f = resume_fn(store.clone(), world.client(), settings);
    let resp = f
        .handle(request("POST", &path(&agent_id), Who::User("alice"), None))
        .await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["state"], "waking");
    assert_eq!(resp.headers()["retry-after"], "2");
    assert_eq!(
        resp.headers()["location"],
        format!("/v1/agents/codex/{agent_id}")
    );
    let waking_session = body["wake"]["session_id"].as_str().unwrap().to_string();

    tokio::time::sleep(Duration::from_millis(1200)).await;
    let (status, body) = answer(
        &f.handle(request("POST", &path(&agent_id), Who::User("alice"), None))
            .await,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        session_id(&body),
        waking_session,
        "the same session, not a new one"
    );
    assert_eq!(world.sim.control().counters().resumes_of(&snapshot_id), 1);

    // Awake already: a further call writes nothing and says resumed: false.
    let before = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap()
        .version;
    let (status, body) = answer(
        &f.handle(request("POST", &path(&agent_id), Who::User("alice"), None))
            .await,
    );
    assert_eq!((status, body["resumed"].as_bool()), (200, Some(false)));
    let after = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap()
        .version;
    assert_eq!(before, after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_resume_keeps_the_snapshot_on_dynamodb() {
    failed_resume_keeps_the_snapshot(Arc::new(dynamo_store("failed").await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_resume_keeps_the_snapshot_in_memory() {
    failed_resume_keeps_the_snapshot(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_readiness_answers_202_then_200_on_dynamodb() {
    slow_readiness_answers_202_then_200(Arc::new(dynamo_store("slow").await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_readiness_answers_202_then_200_in_memory() {
    slow_readiness_answers_202_then_200(Arc::new(MemoryStore::new())).await;
}

// ---------------------------------------------------------------------------------------------
// Authorisation and bad input, from API Gateway v2 requests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_may_resume_and_what_bad_input_answers() {
    let store = Arc::new(dynamo_store("authz").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, _) = world.asleep_agent("alice", "Mine");
    let f = resume_fn(store.clone(), world.client(), quick());
    let call = |method: &str, p: String, who: Who<'static>, body: Option<&str>| {
        let r = request(method, &p, who, body);
        let f = &f;
        async move { answer(&f.handle(r).await) }
    };

    let (status, body) = call("POST", path(&agent_id), Who::User("mallory"), None).await;
    assert_eq!(status, 404, "another owner's agent is not found: {body}");
    assert_eq!(body["code"], "AGENT_NOT_FOUND");
    assert_eq!(body["type"], "urn:snapwake:problem:agent-not-found");
    assert!(body["request_id"].is_string());

    let (status, body) = call("POST", path(&agent_id), Who::Nobody, None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("UNAUTHENTICATED"))
    );

    let bad: Vec<(String, Option<&str>, u16)> = vec![
        ("/v1/agents/gpt/x/resume".into(), None, 400),
        ("/v1/agents/Codex/x/resume".into(), None, 400),
        (path(&"a".repeat(201)), None, 400),
        (path("a%2Fb"), None, 400),
        (path("a%00b"), None, 400),
        (path(&agent_id), Some("{not json"), 400),
        (path(&agent_id), Some("[1,2]"), 400),
        (path(&agent_id), Some(r#"{"snapshot_id": 7}"#), 400),
        (path(&agent_id), Some(r#"{"snapshot_id": "../x/y"}"#), 400),
        (
            path(&agent_id),
            Some(r#"{"snapshot_id": "snap-nope"}"#),
            422,
        ),
        (
            path("studio-alice-00000000000000000000000000000000"),
            None,
            404,
        ),
    ];
    for (p, body, want) in bad {
        let (status, answer) = call("POST", p.clone(), Who::User("alice"), body).await;
        assert_eq!(status, want, "{p} {body:?}: {answer}");
        assert!(answer["code"].is_string(), "problem+json for {p}");
    }
    let huge = format!(r#"{{"snapshot_id": "{}"}}"#, "x".repeat(17 * 1024));
    let (status, body) = call("POST", path(&agent_id), Who::User("alice"), Some(&huge)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (413, Some("PAYLOAD_TOO_LARGE"))
    );
    let (status, _) = call("GET", path(&agent_id), Who::User("alice"), None).await;
    assert_eq!(status, 405);
    let (status, _) = call("POST", "/v1/nothing".into(), Who::User("alice"), None).await;
    assert_eq!(status, 404);

    // An admin may wake anyone's agent; the owner then finds it awake.
    let (status, body) = call("POST", path(&agent_id), Who::Admin("root"), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resumed"], true);
    assert_eq!(
        body["owner"], "alice",
        "the admin is not recorded as the owner"
    );
    let (status, body) = call("POST", path(&agent_id), Who::User("alice"), None).await;
    assert_eq!((status, body["resumed"].as_bool()), (200, Some(false)));
    assert!(
        !body.to_string().contains("auth="),
        "no session endpoint in answers"
    );

    // A delete holding the agent: 409 with Retry-After; a tombstone: 410.
    let (other, _) = world.asleep_agent("alice", "Other");
    let key = AgentKey::new(Kind::Codex, &other);
    store
        .update(
            &key,
            &Condition::Absent,
            &Changes {
                state: Some(WakeState::Deleting),
                holder: Some(Some("deleter".into())),
                bump_fence: true,
                lease_until_ms: Some(now_ms() + 60_000),
                ..Changes::default()
            },
        )
        .await
        .unwrap();
    let resp = f
        .handle(request("POST", &path(&other), Who::User("alice"), None))
        .await;
    assert_eq!(resp.status().as_u16(), 409);
    assert!(resp.headers().contains_key("retry-after"));
    store
        .update(
            &key,
            &Condition::Held {
                holder: "deleter".into(),
                fence: 1,
            },
            &Changes {
                state: Some(WakeState::Gone),
                holder: Some(None),
                expires_at: Some(Some(snapwake::timestamp::now_s() + 3600)),
                ..Changes::default()
            },
        )
        .await
        .unwrap();
    let (status, body) = call("POST", path(&other), Who::User("alice"), None).await;
    assert_eq!((status, body["code"].as_str()), (410, Some("AGENT_GONE")));
}

// ---------------------------------------------------------------------------------------------
// The answers of a wake in the less common shapes of an agent

/// A `snapshot-<id>` agent (a snapshot with no UserSessionId) wakes from its own snapshot
/// every time: after a wake that worked and expired, and after one that failed, its record
/// names its Tool and the next resume finds the snapshot there, never 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_agent_wakes_again_after_a_wake_that_expired_or_failed() {
    let store = Arc::new(dynamo_store("snapshot-agent").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let subject = Subject::snapshot_agent(&world);
    let f = resume_fn(store.clone(), world.client(), quick());

    let first = session_id(&subject.converge(&f).await);
    ctl.advance(Duration::from_secs(9 * 3600));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = session_id(&subject.converge(&f).await);
    assert_ne!(first, second);
    assert_eq!(ctl.counters().resumes_of(&subject.snapshot_id), 2);

    // A wake that fails for sure (its session is gone at the first poll), then one that works.
    ctl.advance(Duration::from_secs(9 * 3600));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // Two NotFounds: the check of the expired session (it is gone anyway), then the first
    // poll of the new one.
    ctl.inject(Fault::error(Some("GetSession"), "InvalidResource.NotFound", 404).next(2))
        .unwrap();
    let (status, body) = answer(
        &f.handle(request("POST", &path(&subject.agent_id), subject.who, None))
            .await,
    );
    assert_eq!(status, 502, "{body}");
    let record = store
        .get(&AgentKey::new(Kind::Codex, &subject.agent_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, WakeState::Failed);
    assert_eq!(
        record.description.tool_id.as_deref(),
        Some(world.recoverable.as_str())
    );
    subject.converge(&f).await;
    assert_eq!(
        subject.live(&world),
        1,
        "the failed wake's session adopted, not doubled"
    );
    assert_eq!(ctl.counters().resumes_of(&subject.snapshot_id), 3);
}

/// Resume answers an awake temporary agent 200 `resumed: false` (it is awake; there is
/// nothing to wake), and 422 once its session has ended (a temporary agent keeps no snapshot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_agent_is_awake_until_its_session_ends_then_not_wakeable() {
    let store = Arc::new(dynamo_store("temporary").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let created = api
        .create
        .handle(create_request(
            Who::User("alice"),
            r#"{"kind": "codex", "display_name": "Scratch", "retention": "temporary"}"#,
            None,
        ))
        .await;
    let (status, body) = answer(&created);
    assert_eq!(status, 201, "{body}");
    let agent_id = body["agent_id"].as_str().unwrap().to_string();
    let (status, body) = answer(
        &api.resume
            .handle(request("POST", &path(&agent_id), Who::User("alice"), None))
            .await,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resumed"], false);
    assert_eq!(body["retention"], "temporary");

    world.sim.control().advance(Duration::from_secs(9 * 3600));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, body) = answer(
        &api.resume
            .handle(request("POST", &path(&agent_id), Who::User("alice"), None))
            .await,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("NOT_WAKEABLE")),
        "{body}"
    );
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap();
    assert!(record.holder.is_none(), "the lock is given back");
    assert_eq!(
        world
            .sim
            .control()
            .counters()
            .received("ResumeSessionFromSnapshot"),
        0
    );
}

/// A snapshot that vanishes between the listing and the Resume (AgentKit answers NotFound):
/// 422 NOT_WAKEABLE, the agent rests, nothing is recorded as a provider failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_answered_not_found_is_not_wakeable() {
    let store = Arc::new(dynamo_store("resume-404").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Gone soon");
    let ctl = world.sim.control();
    ctl.inject(
        Fault::error(
            Some("ResumeSessionFromSnapshot"),
            "InvalidResource.NotFound",
            404,
        )
        .next(1),
    )
    .unwrap();
    let f = resume_fn(store.clone(), world.client(), quick());
    let (status, body) = answer(
        &f.handle(request("POST", &path(&agent_id), Who::User("alice"), None))
            .await,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("NOT_WAKEABLE")),
        "{body}"
    );
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((record.state, record.holder), (WakeState::Asleep, None));
    assert!(record.resume_sent_at_ms.is_none());
    assert!(ctl.snapshot(&snapshot_id).is_some());
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 0);
}

/// A resume of an agent that exists nowhere leaves nothing behind: the record the winner's
/// acquire made is retired, so the id stays a 404 (and absent from the owner's list) however
/// many callers ask at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_an_agent_that_does_not_exist_is_404_for_everybody_and_leaves_no_record() {
    let store = Arc::new(dynamo_store("resume-nothing").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let agent_id = snapwake::identity::usid::mint("alice");
    let f = Arc::new(resume_fn(store.clone(), world.client(), quick()));
    let answers = storm(f.clone(), &agent_id, 20).await;
    assert!(answers.iter().all(|(s, _)| *s == 404), "{answers:?}");
    assert!(store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        world
            .sim
            .control()
            .counters()
            .received("ResumeSessionFromSnapshot"),
        0
    );
}
