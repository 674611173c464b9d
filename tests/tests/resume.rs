//! The resume function end to end: API Gateway v2 requests into the handler, the wake lock on
//! DynamoDB Local (and the in-memory store), AgentKit simulated over HTTP.
//!
//! The storm spreads 500 resumes of one agent over threads of this process and over two child
//! processes (this same test binary, re-run in child mode), all sharing one table and one
//! simulator: exactly one ResumeSessionFromSnapshot may reach AgentKit.

mod support;

use std::future::Future;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use snapwake::agentkit::sim::Fault;
use snapwake::agentkit::types::Action;
use snapwake::agentkit::{AgentKit, AgentKitClient, AgentKitError};
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::registry::{RegistryCache, ToolOverrides};
use snapwake::store::memory::MemoryStore;
use snapwake::store::{now_ms, AgentStore, Changes, Condition};
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use support::*;
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
// The storm

const STORM_PARENT: usize = 200;
const STORM_CHILDREN: usize = 2;
const STORM_PER_CHILD: usize = 150;

/// Run `count` concurrent resumes of `agent_id`; answers (status, session id) per caller.
async fn storm<S: AgentStore, K: AgentKit>(
    function: Arc<Resume<S, K>>,
    agent_id: &str,
    count: usize,
) -> Vec<(u16, String)> {
    let mut tasks = Vec::new();
    for _ in 0..count {
        let function = function.clone();
        let p = path(agent_id);
        tasks.push(tokio::spawn(async move {
            let resp = function
                .handle(request("POST", &p, Who::User("alice"), None))
                .await;
            let (status, body) = answer(&resp);
            (status, session_id(&body))
        }));
    }
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

#[test]
fn storm_of_500_resumes_over_threads_and_processes_sends_one_resume() {
    if std::env::var_os("SNAPWAKE_STORM_CHILD").is_some() {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = dynamo_store("storm").await;
        let world = World::start(Duration::from_millis(1500)).await;
        world.register(&store).await;
        let (agent_id, snapshot_id) = world.asleep_agent("alice", "Storm");
        let start_at = now_ms() + 2000;

        let children: Vec<_> = (0..STORM_CHILDREN)
            .map(|_| {
                Command::new(std::env::current_exe().unwrap())
                    .args(["storm_child", "--exact", "--nocapture", "--test-threads=1"])
                    .env("SNAPWAKE_STORM_CHILD", "1")
                    .env("STORM_ENDPOINT", world.sim.endpoint())
                    .env("STORM_TABLE", store.table())
                    .env("STORM_AGENT", &agent_id)
                    .env("STORM_COUNT", STORM_PER_CHILD.to_string())
                    .env("STORM_START_AT_MS", start_at.to_string())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();

        let function = Arc::new(resume_fn(store, world.client(), WakeSettings::default()));
        wait_until(start_at).await;
        let mut answers = storm(function, &agent_id, STORM_PARENT).await;
        for child in children {
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
            assert_eq!(lines.len(), STORM_PER_CHILD, "every child caller answered");
            answers.extend(lines);
        }

        assert_eq!(
            answers.len(),
            STORM_PARENT + STORM_CHILDREN * STORM_PER_CHILD
        );
        assert!(
            answers.iter().all(|(s, _)| *s == 200),
            "all 200: {:?}",
            answers
                .iter()
                .filter(|(s, _)| *s != 200)
                .take(3)
                .collect::<Vec<_>>()
        );
        let first = answers[0].1.clone();
        assert!(!first.is_empty());
        assert!(
            answers.iter().all(|(_, sid)| *sid == first),
            "one session for everybody"
        );
        let counters = world.sim.control().counters();
        assert_eq!(counters.received("ResumeSessionFromSnapshot"), 1);
        assert_eq!(counters.resumes_of(&snapshot_id), 1);
        assert_eq!(counters.live_sessions_of(&agent_id), 1);
        assert!(
            world.sim.control().snapshot(&snapshot_id).is_some(),
            "snapshot kept"
        );
    });
}

/// Child mode of the storm: resumes from another OS process against the same table and
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
/// or after AgentKit acted — what a Lambda killed at that instant looks like.
struct Stall {
    inner: AgentKitClient,
    action: &'static str,
    after: bool,
    armed: AtomicBool,
    reached: Notify,
}

impl AgentKit for Stall {
    async fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> Result<A::Output, AgentKitError> {
        let stall = A::NAME == self.action && self.armed.swap(false, Ordering::SeqCst);
        if stall && !self.after {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        let out = self.inner.call(region, request, deadline).await;
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

async fn crash_at(action: &'static str, after: bool) {
    let store = Arc::new(dynamo_store("crash").await);
    let world = World::start(Duration::from_millis(300)).await;
    world.register(&store).await;
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Crashy");

    let stall = Arc::new(Stall {
        inner: world.client(),
        action,
        after,
        armed: AtomicBool::new(true),
        reached: Notify::new(),
    });
    let doomed = Arc::new(resume_fn(store.clone(), stall.clone(), quick()));
    let p = path(&agent_id);
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
        .expect("the holder reached the stall point");
    holder.abort();
    let _ = holder.await;

    // The next caller converges: one live session, one resume in all, snapshot intact.
    let next = resume_fn(store.clone(), world.client(), quick());
    let mut last = (0, serde_json::Value::Null);
    for _ in 0..20 {
        last = answer(
            &next
                .handle(request("POST", &path(&agent_id), Who::User("alice"), None))
                .await,
        );
        if last.0 == 200 {
            break;
        }
        assert_eq!(last.0, 202, "{:?}", last.1);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(last.0, 200, "{:?}", last.1);
    let counters = world.sim.control().counters();
    assert_eq!(
        counters.resumes_of(&snapshot_id),
        1,
        "no second resume after a crash at {action}"
    );
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
    assert!(world.sim.control().snapshot(&snapshot_id).is_some());
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, WakeState::Awake);
    assert_eq!(
        record.session_id.as_deref(),
        Some(session_id(&last.1).as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_dead_after_acquire_is_recovered_by_the_next_caller() {
    // Right after acquiring, the holder's first AgentKit call is the reconcile listing.
    crash_at("ListSessions", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_dead_after_resume_is_reconciled_not_resumed_again() {
    crash_at("ResumeSessionFromSnapshot", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_dead_after_recording_the_session_is_recovered_by_polling() {
    // After recording the SessionId the holder polls GetSession.
    crash_at("GetSession", false).await;
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
    assert!(record.error.as_deref().is_some_and(|e| e.contains("ended")));
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
                expires_at: Some(Some(snapwake::store::now_s() + 3600)),
                ..Changes::default()
            },
        )
        .await
        .unwrap();
    let (status, body) = call("POST", path(&other), Who::User("alice"), None).await;
    assert_eq!((status, body["code"].as_str()), (410, Some("AGENT_GONE")));
}
