//! Crashes: a holder stopped dead at each step of a wake (after acquiring, after the Resume,
//! after recording the session), recovered by the next caller without a second Resume, on
//! DynamoDB and in memory; and `fail` by anyone unsticks an agent whose holder died.

use super::*;

// ---------------------------------------------------------------------------------------------
// Crashes: a holder stopped dead at each step

/// A hook in front of the real client that stops the caller forever at one action, before
/// or after AgentKit acted — what a Lambda killed at that instant looks like. With
/// `after_a_resume`, only a call made after a Resume went through stalls (the polls of the
/// session it recorded, not the check of an earlier one).
struct Stall {
    action: &'static str,
    after: bool,
    after_a_resume: bool,
    resumed: AtomicBool,
    armed: AtomicBool,
    reached: Notify,
}

/// `inner` behind a [`Stall`] at `at`.
fn stalled(inner: AgentKitClient, at: StallAt) -> Hooked<AgentKitClient, Stall> {
    let hook = Stall {
        action: at.action,
        after: at.after,
        after_a_resume: at.after_a_resume,
        resumed: AtomicBool::new(false),
        armed: AtomicBool::new(true),
        reached: Notify::new(),
    };
    Hooked { inner, hook }
}

impl AgentKitHook for Stall {
    async fn around<A: Action, C: AgentKitCall>(&self, _: &A, call: C) -> C::Output {
        let eligible = !self.after_a_resume || self.resumed.load(Ordering::SeqCst);
        let stall = A::NAME == self.action && eligible && self.armed.swap(false, Ordering::SeqCst);
        if stall && !self.after {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        let out = call.await;
        if A::NAME == "ResumeSessionFromSnapshot" {
            self.resumed.store(true, Ordering::SeqCst);
        }
        if stall {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        out
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

async fn crash_at_on<S: AgentStore + snapwake::store::ScheduleStore + 'static>(
    store: Arc<S>,
    snapshot_agent: bool,
    later: bool,
    at: StallAt,
) {
    let world = World::registered(Duration::from_millis(300), &store).await;
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
        tokio::time::sleep(Duration::from_millis(2100)).await;
    }
    let resumes_before = ctl.counters().received("ResumeSessionFromSnapshot");

    let stall = Arc::new(stalled(world.client(), at));
    let doomed = Arc::new(resume_fn(store.clone(), stall.clone(), quick()));
    let p = path(&subject.agent_id);
    let who = subject.who;
    let holder = spawn_request(&doomed, request("POST", &p, who, None));
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
    let (store, world, _) = deployed_shared("fail-by-anyone", Duration::from_millis(1000)).await;
    let subject = Subject::owned(&world);
    let ctl = world.sim.control();
    let settings = WakeSettings {
        ready_timeout: Duration::from_secs(30),
        wait: Duration::from_millis(2500),
        ..quick()
    };
    let stall = Arc::new(stalled(world.client(), AFTER_RECORDING));
    let doomed = Arc::new(resume_fn(store.clone(), stall.clone(), settings.clone()));
    let p = path(&subject.agent_id);
    let holder = spawn_request(&doomed, alices_request("POST", &p));
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
            .handle(alices_request("POST", &path(&subject.agent_id)))
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

    // Wakeable again, once the failure is no longer the answer to everyone who asks.
    outcome_forgotten().await;
    let body = subject.converge(&next).await;
    assert_ne!(session_id(&body), recorded);
    assert_eq!(subject.live(&world), 1);
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 2);
}
