//! Sleep now, end to end: API Gateway v2 requests into the resume function, the lock on
//! DynamoDB Local, AgentKit simulated over HTTP. A sleep snapshots the session, waits until
//! the snapshot is Ready, only then ends the session — once, however many callers ask, never
//! racing a wake, and never ending a session whose snapshot is not Ready.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::AgentStore;
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_sim::{Fault, SimControl};
use snapwake_tests::*;

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

fn key(agent_id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, agent_id)
}

async fn post<S: AgentStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    verb: &str,
) -> (u16, Value) {
    let path = format!("/v1/agents/codex/{agent_id}/{verb}");
    let resp = f
        .handle(request("POST", &path, Who::User("alice"), None))
        .await;
    let (status, body) = answer(&resp);
    if status == 202 {
        assert_eq!(header_of(&resp, "retry-after"), Some("2"), "{body}");
        assert_eq!(
            header_of(&resp, "location"),
            Some(format!("/v1/agents/codex/{agent_id}").as_str())
        );
    }
    (status, body)
}

/// POST until the answer is not 202 (at most 30 s), as a client honouring `Retry-After`
/// would, only faster. Answers the last answer and how many 202s came first.
async fn settle<S: AgentStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    verb: &str,
) -> (u16, Value, u32) {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    let mut accepted = 0;
    loop {
        let (status, body) = post(f, agent_id, verb).await;
        if status != 202 || std::time::Instant::now() > until {
            return (status, body, accepted);
        }
        accepted += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn live_sessions(ctl: &SimControl, agent_id: &str) -> Vec<String> {
    ctl.sessions()
        .into_iter()
        .filter(|s| s.user_session_id.as_deref() == Some(agent_id) && s.is_active())
        .filter_map(|s| s.session_id)
        .collect()
}

/// The snapshots of `agent_id` that `before` did not list.
fn new_snapshots(world: &World, agent_id: &str, before: &[String]) -> Vec<String> {
    world
        .snapshots_of(agent_id)
        .into_iter()
        .filter(|s| !before.contains(s))
        .collect()
}

fn received(ctl: &SimControl, action: &str) -> u64 {
    ctl.counters().received(action)
}

/// An awake agent of alice (woken through snapwake, so its record knows it): its id and
/// the live session's id.
async fn awake_agent<S: AgentStore, K: AgentKit>(
    world: &World,
    f: &Resume<S, K>,
    name: &str,
) -> (String, String) {
    let (agent_id, _) = world.asleep_agent("alice", name);
    let (status, body, _) = settle(f, &agent_id, "resume").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("awake")),
        "{body}"
    );
    let live = live_sessions(&world.sim.control(), &agent_id);
    assert_eq!(live.len(), 1);
    (agent_id, live[0].clone())
}

// ---------------------------------------------------------------------------------------------
// Day after day: sleep, wake, sleep, wake

/// Three rounds: each sleep leaves exactly one new Ready snapshot and no live session (a
/// slow snapshot answers 202 first, then 200), and each resume wakes from that newest
/// snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleep_then_resume_three_times_over() {
    let store = dynamo_store("sleep-cycle").await;
    let world = World::start(Duration::from_millis(200)).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, _) = awake_agent(&world, &f, "Data helper").await;

    // Round 2 takes longer than a request's wait (4 s): 202 first, continued by the next call.
    for (round, ready_after) in [(0, 300), (1, 5000), (2, 0)] {
        ctl.set_snapshot_ready_delay(Duration::from_millis(ready_after));
        let before = world.snapshots_of(&agent_id);
        let (status, body, accepted) = settle(&f, &agent_id, "sleep").await;
        assert_eq!(status, 200, "round {round}: {body}");
        assert_eq!(
            (body["state"].as_str(), body["slept"].as_bool()),
            (Some("asleep"), Some(true)),
            "{body}"
        );
        if ready_after > 4000 {
            assert!(
                accepted > 0,
                "a snapshot slower than the wait answers 202 first"
            );
        }
        let new = new_snapshots(&world, &agent_id, &before);
        assert_eq!(new.len(), 1, "round {round}: one new snapshot, not {new:?}");
        let snapshot = ctl.snapshot(&new[0]).unwrap();
        assert_eq!(snapshot.status.as_deref(), Some("Ready"));
        assert_eq!(snapshot.user_session_id.as_deref(), Some(agent_id.as_str()));
        assert!(live_sessions(&ctl, &agent_id).is_empty(), "no live session");
        assert_eq!(
            body["snapshots"][0]["snapshot_id"],
            new[0].as_str(),
            "{body}"
        );
        assert!(body["session"].is_null(), "{body}");
        let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
        assert_eq!(record.state, WakeState::Asleep);
        assert_eq!(record.session_id, None);
        assert_eq!(
            record.snapshots[0].snapshot_id, new[0],
            "the index knows it at once"
        );

        let (status, body, _) = settle(&f, &agent_id, "resume").await;
        assert_eq!(
            (status, body["resumed"].as_bool()),
            (200, Some(true)),
            "{body}"
        );
        assert_eq!(
            ctl.counters().resumes_of(&new[0]),
            1,
            "round {round}: woken from the snapshot the sleep took"
        );
        assert_eq!(live_sessions(&ctl, &agent_id).len(), 1);
    }
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 3);
    assert_eq!(received(&ctl, "ResumeSessionFromSnapshot"), 4);
}

/// An agent with no live session sleeps without a snapshot: 200, `slept: false`; a temporary
/// agent is 422 `NOT_SLEEPABLE`, its session untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asleep_agents_stay_asleep_and_temporary_ones_do_not_sleep() {
    let store = dynamo_store("sleep-edges").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let f = resume_fn(store.clone(), world.client(), quick_wake());

    let (asleep, snapshot) = world.asleep_agent("alice", "Resting");
    let (status, body) = post(&f, &asleep, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(false)),
        "{body}"
    );
    assert_eq!(body["state"], "asleep", "{body}");
    assert_eq!(body["snapshots"][0]["snapshot_id"], snapshot.as_str());
    // Twice: the same.
    let (status, body) = post(&f, &asleep, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(false)),
        "{body}"
    );
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 0);

    // A temporary agent, awake on the temporary Tool.
    let temp = snapwake::identity::usid::mint("alice");
    let session = ctl
        .seed_session(snapwake_sim::SeedSession {
            tool_id: world.temporary.clone(),
            user_session_id: Some(temp.clone()),
            metadata: vec![snapwake::agentkit::types::MetadataEntry::string(
                "Username", "alice",
            )],
            ..Default::default()
        })
        .unwrap();
    let (status, body) = post(&f, &temp, "sleep").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("NOT_SLEEPABLE")),
        "{body}"
    );
    assert!(ctl.session(&session).unwrap().is_active());
    // Known to the record now: refused before any lock.
    let (status, _) = post(&f, &temp, "sleep").await;
    assert_eq!(status, 422);
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 0);
    let record = store.get(&key(&temp)).await.unwrap();
    assert!(
        record.is_none_or(|r| !r.state.is_held()),
        "no lock left behind"
    );
}

// ---------------------------------------------------------------------------------------------
// Many at once

/// 50 sleeps of one awake agent at once: one CreateSessionSnapshot, one DeleteSession, and
/// every caller answered 200 asleep (some after a 202).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_sleeps_at_once_take_one_snapshot_and_end_one_session() {
    let store = dynamo_store("sleep-fifty").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    ctl.set_snapshot_ready_delay(Duration::from_millis(500));
    let f = Arc::new(resume_fn(store.clone(), world.client(), quick_wake()));
    let (agent_id, session) = awake_agent(&world, &f, "Busy").await;
    let before = world.snapshots_of(&agent_id);

    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let f = f.clone();
            let agent_id = agent_id.clone();
            tokio::spawn(async move { settle(&f, &agent_id, "sleep").await })
        })
        .collect();
    let mut slept = 0;
    for t in tasks {
        let (status, body, _) = t.await.unwrap();
        assert_eq!(
            (status, body["state"].as_str()),
            (200, Some("asleep")),
            "{body}"
        );
        slept += usize::from(body["slept"] == true);
    }
    assert!(slept >= 1, "at least the holder says it slept");
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(received(&ctl, "DeleteSession"), 1);
    assert_eq!(new_snapshots(&world, &agent_id, &before).len(), 1);
    assert!(!ctl.session(&session).is_some_and(|s| s.is_active()));
}

/// A sleep in flight and 50 resumes arriving while it snapshots: the resumes wait for the
/// sleep to settle, then wake the agent once from the new snapshot. No error answers, one
/// CreateSessionSnapshot, one Resume, one live session at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_racing_fifty_resumes_ends_awake_from_the_new_snapshot() {
    let store = dynamo_store("sleep-race").await;
    let world = World::start(Duration::from_millis(200)).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let f = Arc::new(resume_fn(store.clone(), world.client(), quick_wake()));
    let (agent_id, _) = awake_agent(&world, &f, "Racer").await;
    let before = world.snapshots_of(&agent_id);
    ctl.reset_counters();
    ctl.set_snapshot_ready_delay(Duration::from_millis(800));

    let sleep = tokio::spawn({
        let f = f.clone();
        let agent_id = agent_id.clone();
        async move { settle(&f, &agent_id, "sleep").await }
    });
    // The resumes arrive once the sleep holds the agent.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = store.get(&key(&agent_id)).await.unwrap().unwrap();
        if r.state == WakeState::Sleeping {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the sleep never held the agent"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let resumes: Vec<_> = (0..50)
        .map(|_| {
            let f = f.clone();
            let agent_id = agent_id.clone();
            tokio::spawn(async move { settle(&f, &agent_id, "resume").await })
        })
        .collect();
    let (status, body, _) = sleep.await.unwrap();
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    let mut sessions = std::collections::BTreeSet::new();
    for t in resumes {
        let (status, body, _) = t.await.unwrap();
        assert_eq!(
            (status, body["state"].as_str()),
            (200, Some("awake")),
            "{body}"
        );
        // Joiners answer from the record: named, with the snapshots it summarises.
        assert_eq!(body["display_name"], "Racer", "{body}");
        assert!(
            body["snapshots"].as_array().is_some_and(|s| s.len() >= 2),
            "{body}"
        );
        sessions.insert(body["session"]["session_id"].as_str().unwrap().to_string());
    }
    let new = new_snapshots(&world, &agent_id, &before);
    assert_eq!(new.len(), 1);
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(received(&ctl, "ResumeSessionFromSnapshot"), 1);
    assert_eq!(
        ctl.counters().resumes_of(&new[0]),
        1,
        "from the new snapshot"
    );
    let live = live_sessions(&ctl, &agent_id);
    assert_eq!(live.len(), 1);
    assert_eq!(
        sessions.into_iter().collect::<Vec<_>>(),
        live,
        "everyone got that session"
    );
}

/// A delete and a keepalive arriving while the agent sleeps answer 409; once it is asleep,
/// the delete goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_while_sleeping_is_409() {
    let store = dynamo_store("sleep-delete").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    // A wait just above the client's request timeout (2 s): a Resume or a snapshot is sent.
    let wake = WakeSettings {
        wait: Duration::from_millis(2500),
        ..quick_wake()
    };
    let f = resume_fn(store.clone(), world.client(), wake.clone());
    let (agent_id, session) = awake_agent(&world, &f, "Doomed").await;
    ctl.set_snapshot_ready_delay(Duration::from_secs(600));
    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (202, Some("sleeping")),
        "{body}"
    );
    assert_eq!(body["wake"]["state"], "sleeping", "{body}");
    // Lists and the agent's own page say so too (and `state=sleeping` filters on it).
    let list = snapwake_list::List::new(
        store.clone(),
        world.client(),
        RegistryCache::new(ToolOverrides::default()),
        identity(),
        snapwake_list::ListSettings {
            lock: wake.lock.clone(),
            cursor_key: None,
        },
    );
    let (status, listed) = answer(
        &list
            .handle(request_query(
                "GET",
                "/v1/agents",
                &[("state", "sleeping")],
                Who::User("alice"),
            ))
            .await,
    );
    assert_eq!(status, 200, "{listed}");
    let ids: Vec<_> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, std::slice::from_ref(&agent_id), "{listed}");
    let one = format!("/v1/agents/codex/{agent_id}");
    let (status, single) = answer(
        &list
            .handle(request("GET", &one, Who::User("alice"), None))
            .await,
    );
    assert_eq!(
        (status, single["state"].as_str()),
        (200, Some("sleeping")),
        "{single}"
    );

    let delete = snapwake_delete::Delete {
        store: store.clone(),
        agentkit: world.client(),
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        settings: delete_settings(&wake),
    };
    let path = format!("/v1/agents/codex/{agent_id}");
    let (status, body) = answer(
        &delete
            .handle(request("DELETE", &path, Who::User("alice"), None))
            .await,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{body}"
    );
    assert!(ctl.session(&session).unwrap().is_active(), "nothing ended");

    // The snapshot becomes Ready; the next sleep call finishes, then the delete works.
    ctl.advance(Duration::from_secs(601));
    let (status, body, _) = settle(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("asleep")),
        "{body}"
    );
    let (status, _) = answer(
        &delete
            .handle(request("DELETE", &path, Who::User("alice"), None))
            .await,
    );
    assert_eq!(status, 204);
}

// ---------------------------------------------------------------------------------------------
// Faults: the session is never ended without its snapshot

/// CreateSessionSnapshot refused (a 4xx: 502, not retryable) or failing (a 5xx whose snapshot
/// never shows up: 502 retryable): the session alive and the agent awake; the next sleep
/// succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_cannot_be_taken_leaves_the_agent_awake() {
    let store = dynamo_store("sleep-refused").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, session) = awake_agent(&world, &f, "Stubborn").await;

    for (status, code) in [(400, "InvalidParameter"), (500, "InternalError")] {
        ctl.inject(Fault::error(Some("CreateSessionSnapshot"), code, status).next(1))
            .unwrap();
        let (got, body) = post(&f, &agent_id, "sleep").await;
        assert_eq!(
            (got, body["code"].as_str(), body["retryable"].as_bool()),
            (502, Some("PROVIDER_ERROR"), Some(status >= 500)),
            "{body}"
        );
        assert!(
            ctl.session(&session).unwrap().is_active(),
            "the session lives on"
        );
        let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
        assert_eq!(record.state, WakeState::Awake, "{record:?}");
        assert_eq!(record.session_id.as_deref(), Some(session.as_str()));
        // Still awake to a resume, with the same session.
        let (status, body, _) = settle(&f, &agent_id, "resume").await;
        assert_eq!(
            (status, body["resumed"].as_bool()),
            (200, Some(false)),
            "{body}"
        );
        assert_eq!(body["session"]["session_id"], session.as_str());
    }
    ctl.clear_faults();
    let (status, body, _) = settle(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    assert_eq!(received(&ctl, "DeleteSession"), 1);
}

/// A snapshot that ends `Failed` after `Creating`: 502 retryable to the sleeper and to the
/// callers that joined it, the session alive, the agent awake; then a good snapshot sleeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_fails_leaves_the_agent_awake_for_everyone_who_joined() {
    let store = dynamo_store("sleep-failed").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let f = Arc::new(resume_fn(store.clone(), world.client(), quick_wake()));
    let (agent_id, session) = awake_agent(&world, &f, "Fragile").await;
    ctl.set_snapshot_outcome("Failed");
    ctl.set_snapshot_ready_delay(Duration::from_millis(400));

    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let f = f.clone();
            let agent_id = agent_id.clone();
            tokio::spawn(async move { settle(&f, &agent_id, "sleep").await })
        })
        .collect();
    for t in tasks {
        let (status, body, _) = t.await.unwrap();
        assert_eq!(
            (status, body["code"].as_str(), body["retryable"].as_bool()),
            (502, Some("PROVIDER_ERROR"), Some(true)),
            "{body}"
        );
    }
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(
        received(&ctl, "DeleteSession"),
        0,
        "never ended without its snapshot"
    );
    assert!(ctl.session(&session).unwrap().is_active());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Awake, "{record:?}");

    ctl.set_snapshot_outcome("Ready");
    let (status, body, _) = settle(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 2);
}

/// A snapshot that never becomes Ready within the budgets: every call answers 202 (the
/// session alive, the agent `sleeping`), and a resume meanwhile answers 202 too — never an
/// error, never a second snapshot. Once it is Ready, the next call finishes the sleep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_slower_than_every_budget_is_continued_by_the_next_call() {
    let store = dynamo_store("sleep-slow").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let wake = WakeSettings {
        wait: Duration::from_millis(2500),
        ..quick_wake()
    };
    let f = resume_fn(store.clone(), world.client(), wake);
    let (agent_id, session) = awake_agent(&world, &f, "Slow").await;
    ctl.set_snapshot_ready_delay(Duration::from_secs(3600));

    for _ in 0..2 {
        let (status, body) = post(&f, &agent_id, "sleep").await;
        assert_eq!(
            (status, body["state"].as_str()),
            (202, Some("sleeping")),
            "{body}"
        );
        let (status, body) = post(&f, &agent_id, "resume").await;
        assert_eq!(status, 202, "a resume waits for the sleep: {body}");
        assert!(
            ctl.session(&session).unwrap().is_active(),
            "the session lives on"
        );
    }
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(received(&ctl, "DeleteSession"), 0);

    ctl.advance(Duration::from_secs(3601));
    let (status, body, _) = settle(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    assert!(!ctl.session(&session).is_some_and(|s| s.is_active()));
    assert_eq!(received(&ctl, "DeleteSession"), 1);
}

/// The holder dies right after CreateSessionSnapshot acted (before it could name the
/// snapshot). Once its lease lapses the session may have done more work, so the next sleep
/// takes a snapshot of its own and ends the session on that one; the dead holder's snapshot is
/// one more for the retention sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_that_died_after_snapshotting_is_started_over() {
    let store = Arc::new(dynamo_store("sleep-crash-snap").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let wake = WakeSettings {
        lock: quick_lock(Duration::from_millis(800)),
        ..quick_wake()
    };
    let f = resume_fn(store.clone(), world.client(), wake.clone());
    let (agent_id, session) = awake_agent(&world, &f, "Crashy").await;
    let before = world.snapshots_of(&agent_id);

    let gate = Arc::new(Gate::after(world.client(), "CreateSessionSnapshot"));
    let dying = Arc::new(resume_fn(store.clone(), gate.clone(), wake.clone()));
    let holder = tokio::spawn({
        let agent_id = agent_id.clone();
        async move { post(&dying, &agent_id, "sleep").await }
    });
    gate.reached().await;
    holder.abort();
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Sleeping);
    assert_eq!(
        record.snapshot_id, None,
        "it died before naming the snapshot"
    );
    assert!(ctl.session(&session).unwrap().is_active());
    let abandoned = new_snapshots(&world, &agent_id, &before);
    assert_eq!(abandoned.len(), 1);

    let (status, body, _) = settle(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    assert_eq!(
        received(&ctl, "CreateSessionSnapshot"),
        2,
        "a lapsed sleep starts over"
    );
    let taken = new_snapshots(&world, &agent_id, &before);
    assert_eq!(taken.len(), 2);
    let own = taken.iter().find(|s| !abandoned.contains(s)).unwrap();
    assert_eq!(body["snapshots"][0]["snapshot_id"], own.as_str(), "{body}");
    assert!(live_sessions(&ctl, &agent_id).is_empty());
}

/// A sleep whose lease lapsed while its snapshot was still `Creating`: the next sleep does not
/// adopt that snapshot (the session may have worked since it was asked for) but asks for a new
/// one, and ends the session only once *that* one is Ready — not when the old one is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_sleep_starts_over_with_a_new_snapshot() {
    let store = dynamo_store("sleep-lapsed").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    // A short snapshot lease (it still leaves a DeleteSession of the 2 s AgentKit timeout room
    // after two 2.5 s waits), so the first sleep's lease lapses within the test.
    let wake = WakeSettings {
        wait: Duration::from_millis(2500),
        snapshot_timeout: Duration::from_secs(10),
        ..quick_wake()
    };
    let f = resume_fn(store.clone(), world.client(), wake);
    let (agent_id, session) = awake_agent(&world, &f, "Lapsed").await;
    let before = world.snapshots_of(&agent_id);
    ctl.set_snapshot_ready_delay(Duration::from_secs(100));

    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (202, Some("sleeping")),
        "{body}"
    );
    let first = new_snapshots(&world, &agent_id, &before);
    assert_eq!(first.len(), 1);
    // The agent works on while the first sleep's lease runs out.
    ctl.advance(Duration::from_secs(60));
    tokio::time::sleep(Duration::from_millis(8000)).await;

    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (202, Some("sleeping")),
        "{body}"
    );
    assert_eq!(
        received(&ctl, "CreateSessionSnapshot"),
        2,
        "the lapsed sleep's snapshot is not adopted"
    );
    let second: Vec<String> = new_snapshots(&world, &agent_id, &before)
        .into_iter()
        .filter(|s| !first.contains(s))
        .collect();
    assert_eq!(second.len(), 1);
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.snapshot_id.as_ref(), Some(&second[0]));

    // The old snapshot is Ready, the new one not yet: the session lives on.
    ctl.advance(Duration::from_secs(50));
    assert_eq!(
        ctl.snapshot(&first[0]).unwrap().status.as_deref(),
        Some("Ready")
    );
    assert_ne!(
        ctl.snapshot(&second[0]).unwrap().status.as_deref(),
        Some("Ready")
    );
    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(received(&ctl, "DeleteSession"), 0);
    assert!(ctl.session(&session).unwrap().is_active());

    // Once the new one is Ready, the session ends on it.
    ctl.advance(Duration::from_secs(60));
    let (status, body, _) = settle(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    assert_eq!(received(&ctl, "DeleteSession"), 1);
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 2);
    assert_eq!(
        body["snapshots"][0]["snapshot_id"],
        second[0].as_str(),
        "{body}"
    );
    assert!(live_sessions(&ctl, &agent_id).is_empty());
}

/// The holder dies between DeleteSession and writing `asleep`: a resume finds the agent
/// `sleeping`, carries the sleep on once the holder's polling time is over (the snapshot is
/// Ready, the session already ended), then wakes it from the new snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_that_died_after_ending_the_session_is_finished_by_a_resume() {
    let store = Arc::new(dynamo_store("sleep-crash-end").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let wake = quick_wake();
    let f = resume_fn(store.clone(), world.client(), wake.clone());
    let (agent_id, _) = awake_agent(&world, &f, "Halfway").await;
    let before = world.snapshots_of(&agent_id);

    let gate = Arc::new(Gate::after(world.client(), "DeleteSession"));
    let dying = Arc::new(resume_fn(store.clone(), gate.clone(), wake.clone()));
    let holder = tokio::spawn({
        let agent_id = agent_id.clone();
        async move { post(&dying, &agent_id, "sleep").await }
    });
    gate.reached().await;
    holder.abort();
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Sleeping);
    assert!(
        live_sessions(&ctl, &agent_id).is_empty(),
        "the session is ended"
    );

    let (status, body, _) = settle(&f, &agent_id, "resume").await;
    assert_eq!(
        (status, body["resumed"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    let new = new_snapshots(&world, &agent_id, &before);
    assert_eq!(new.len(), 1);
    assert_eq!(
        ctl.counters().resumes_of(&new[0]),
        1,
        "woken from the sleep's snapshot"
    );
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
}

/// CreateSessionSnapshot acts but its answer is lost (a 500 after applying): the holder finds
/// the snapshot it took by listing the session's snapshots, and the sleep completes with that
/// one snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_snapshot_answer_is_reconciled() {
    let store = dynamo_store("sleep-lost").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, _) = awake_agent(&world, &f, "Lossy").await;
    let before = world.snapshots_of(&agent_id);
    ctl.inject(
        Fault::error(Some("CreateSessionSnapshot"), "InternalError", 500)
            .next(1)
            .after_apply(),
    )
    .unwrap();

    let (status, body, _) = settle(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(new_snapshots(&world, &agent_id, &before).len(), 1);
    assert!(live_sessions(&ctl, &agent_id).is_empty());
}

/// The second day: the session expired on its own (AgentKit kept a snapshot) while the record
/// still says awake. A sleep finds no live session (200, `slept: false`, no snapshot taken),
/// and the next resume wakes the agent from the snapshot the expiry left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_after_the_session_expired_takes_no_snapshot() {
    let store = dynamo_store("sleep-expired").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, session) = awake_agent(&world, &f, "Overnight").await;
    let before = world.snapshots_of(&agent_id);

    ctl.advance(Duration::from_secs(8 * 3600 + 60));
    assert!(!ctl.session(&session).is_some_and(|s| s.is_active()));
    let expiry = new_snapshots(&world, &agent_id, &before);
    assert_eq!(expiry.len(), 1, "AgentKit kept a snapshot at expiry");

    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(false)),
        "{body}"
    );
    assert_eq!(body["state"], "asleep", "{body}");
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 0);
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!((record.state, record.session_id), (WakeState::Asleep, None));

    let (status, body, _) = settle(&f, &agent_id, "resume").await;
    assert_eq!(
        (status, body["resumed"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    assert_eq!(ctl.counters().resumes_of(&expiry[0]), 1);
}

/// A CreateSessionSnapshot whose answer was lost and which AgentKit would carry out a second
/// later (the simulator's `apply_after`): the sleep never ends the session before a Ready
/// snapshot of it exists, ends asleep, the late request comes to nothing, and the next wake
/// comes from a snapshot of that session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_request_applied_late_never_ends_the_session_first() {
    let store = dynamo_store("sleep-late").await;
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, session) = awake_agent(&world, &f, "Late snapshot").await;
    let before = world.snapshots_of(&agent_id);
    ctl.inject(
        Fault::error(Some("CreateSessionSnapshot"), "InternalError", 500)
            .next(1)
            .apply_after(Duration::from_secs(1)),
    )
    .unwrap();

    // Retry as a client would, whatever the first answers say, until the agent is asleep.
    let until = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = post(&f, &agent_id, "sleep").await;
        // Whenever the session is gone, a Ready snapshot of it exists.
        if live_sessions(&ctl, &agent_id).is_empty() {
            let ready = ctl
                .snapshots()
                .into_iter()
                .any(|s| s.session_id.as_deref() == Some(session.as_str()) && s.is_wakeable());
            assert!(
                ready,
                "the session ended before a Ready snapshot of it: {body}"
            );
        }
        if status == 200 && body["slept"] == true {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "never asleep: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The lost request comes due after the session ended: AgentKit has nothing to snapshot,
    // and nothing comes back to life.
    ctl.advance(Duration::from_secs(2));
    assert!(live_sessions(&ctl, &agent_id).is_empty());
    assert_eq!(ctl.late_pending(), 0);
    let taken = new_snapshots(&world, &agent_id, &before);
    assert!(!taken.is_empty());

    let (status, body, _) = settle(&f, &agent_id, "resume").await;
    assert_eq!(status, 200, "{body}");
    let woken_from: Vec<String> = taken
        .iter()
        .filter(|id| ctl.counters().resumes_of(id) == 1)
        .cloned()
        .collect();
    assert_eq!(
        woken_from.len(),
        1,
        "woken from one of this sleep's snapshots: {taken:?}"
    );
}
