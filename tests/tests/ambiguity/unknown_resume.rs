//! Part 2: ambiguous AgentKit answers to Resume (a timeout or a bare 503 after acting), for an
//! agent with a UserSessionId and a `snapshot-<id>` agent: adopted, never doubled, even when the
//! reconcile fails once; and a `snapshot-<id>` agent whose session expired wakes again.

use super::checks::*;
use super::world::*;
use super::*;

// ---------------------------------------------------------------------------------------------
// Part 2: ambiguous AgentKit answers to Resume

/// A Resume AgentKit carried out whose answer says nothing certain.
#[derive(Clone, Copy, Debug)]
enum Unknown {
    /// The answer comes 3 s after AgentKit acted; the client gives up at 2 s.
    TimeoutAfterActing,
    /// A gateway's bare 503 (no envelope, no code) after AgentKit acted.
    Bare503AfterActing,
}

impl Unknown {
    fn fault(self) -> Fault {
        match self {
            Unknown::TimeoutAfterActing => Fault::error(Some(RESUME), "InternalError", 500)
                .after_apply()
                .with_latency(3000)
                .next(1),
            Unknown::Bare503AfterActing => Fault::bare(Some(RESUME), 503).after_apply().next(1),
        }
    }
}

/// Which agent is woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agent {
    /// An agent with a UserSessionId (its sessions can be listed by it).
    UserSession,
    /// `snapshot-<id>`: a snapshot without a UserSessionId, woken by an admin.
    SnapshotOnly,
}

const MARKER: &str = "ambiguity_marker";

/// A wakeable agent of `agent`'s sort: (agent id, snapshot id, who may wake it).
fn seed(world: &World, agent: Agent, marker: &str) -> (String, String, Who<'static>) {
    match agent {
        Agent::UserSession => {
            let (id, snapshot) = world.asleep_agent("alice", "Unknown");
            (id, snapshot, Who::User("alice"))
        }
        Agent::SnapshotOnly => {
            let snapshot = world
                .sim
                .control()
                .seed_snapshot(SeedSnapshot {
                    tool_id: world.recoverable.clone(),
                    user_session_id: None,
                    session_id: Some(format!("s-orphan-{marker}")),
                    session_metadata: vec![MetadataEntry::string(MARKER, marker)],
                    ..SeedSnapshot::default()
                })
                .unwrap();
            (format!("snapshot-{snapshot}"), snapshot, Who::Admin("root"))
        }
    }
}

/// Live sessions of the agent: by UserSessionId, or for a `snapshot-<id>` agent the active
/// sessions without one that were resumed from its snapshot (they carry its metadata).
fn live_of(world: &World, agent: Agent, agent_id: &str, marker: &str) -> usize {
    match agent {
        Agent::UserSession => world.live_sessions_of(agent_id) as usize,
        Agent::SnapshotOnly => world
            .sim
            .control()
            .sessions()
            .into_iter()
            .filter(|s| s.is_active())
            .filter(|s| s.user_session_id.as_deref().is_none_or(str::is_empty))
            .filter(|s| metadata_value(&s.metadata, MARKER) == Some(marker))
            .count(),
    }
}

/// Resume `agent_id` as `who` once, timed: (status, body).
async fn resume_once<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    who: Who<'_>,
) -> (u16, Value) {
    let started = Instant::now();
    let resp = f
        .handle(request(
            "POST",
            &format!("/v1/agents/codex/{agent_id}/resume"),
            who,
            None,
        ))
        .await;
    let took = started.elapsed();
    let (status, body) = answer(&resp);
    assert!(
        took <= f.wake.wait + SLACK,
        "answered {status} after {took:?}, beyond the wait {:?}",
        f.wake.wait
    );
    if let Some(why) = malformed(&resp) {
        panic!("answered {status}, not well-formed: {why}");
    }
    (status, body)
}

/// Callers of one wake in Part 2: the first, and others arriving while its Resume is pending.
const CALLERS: u64 = 3;

/// One caller: resume until 200 (at most 40 calls), every answer 200 or 202, never two live
/// sessions. Answers its statuses and the final body.
async fn resume_until_200<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    world: &World,
    agent: Agent,
    agent_id: &str,
    marker: &str,
    who: Who<'_>,
) -> (Vec<u16>, Value) {
    let mut answers = Vec::new();
    for _ in 0..40 {
        let (status, body) = resume_once(f, agent_id, who).await;
        answers.push(status);
        assert!(
            live_of(world, agent, agent_id, marker) <= 1,
            "two live sessions after {answers:?}"
        );
        match status {
            200 => return (answers, body),
            202 => tokio::time::sleep(Duration::from_millis(250)).await,
            _ => panic!("an unknown outcome is not a failure: {answers:?} {body}"),
        }
    }
    panic!("never 200: {answers:?}");
}

/// A Resume AgentKit carried out but whose answer was `unknown`, with `CALLERS` callers;
/// with `listing_fails`, the holder's first look for the session it started fails too, so it
/// cannot adopt it at once and a later caller (a poller) must find it.
async fn unknown_resume(agent: Agent, unknown: Unknown, listing_fails: bool) {
    let world = World::start(Duration::ZERO).await;
    let store = Arc::new(dynamo_store("amb-unknown").await);
    world.register(&store).await;
    let ctl = world.sim.control();
    let marker = uuid::Uuid::new_v4().simple().to_string();
    let (agent_id, snapshot, who) = seed(&world, agent, &marker);
    let on_resume =
        listing_fails.then(|| Fault::error(Some("ListSessions"), "InternalError", 500).next(1));
    let f = Arc::new(resume_fn(
        store.clone(),
        kit_of(&world, on_resume),
        quick_wake(),
    ));
    let world = Arc::new(world);

    ctl.inject(unknown.fault()).unwrap();
    let callers: Vec<_> = (0..CALLERS)
        .map(|i| {
            let (f, world, agent_id, marker) =
                (f.clone(), world.clone(), agent_id.clone(), marker.clone());
            tokio::spawn(async move {
                // The first caller holds the wake; the others come while its Resume is out.
                tokio::time::sleep(Duration::from_millis(300 * i)).await;
                resume_until_200(&f, &world, agent, &agent_id, &marker, who).await
            })
        })
        .collect();
    let mut sessions = Vec::new();
    for caller in callers {
        let (answers, body) = caller.await.unwrap();
        eprintln!("{agent:?} {unknown:?} listing fails {listing_fails}: answers {answers:?}");
        sessions.push(session_of(&body));
    }
    let session = sessions[0].clone();
    assert!(
        sessions.iter().all(|s| *s == session),
        "one session for everybody: {sessions:?}"
    );
    assert_eq!(ctl.counters().received(RESUME), 1, "never a second Resume");
    assert_eq!(
        live_of(&world, agent, &agent_id, &marker),
        1,
        "one live session"
    );
    assert!(ctl.session(&session).is_some_and(|s| s.is_active()));
    assert!(ctl.snapshot(&snapshot).is_some(), "the snapshot is kept");
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap();
    assert_awake(record, &session);
    // And the next caller gets that session, still with one Resume in all.
    let (status, again) = resume_once(&*f, &agent_id, who).await;
    assert_eq!((status, session_of(&again)), (200, session.clone()));
    assert_eq!(ctl.counters().received(RESUME), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_that_timed_out_after_acting_is_adopted_not_doubled() {
    for listing_fails in [false, true] {
        unknown_resume(
            Agent::UserSession,
            Unknown::TimeoutAfterActing,
            listing_fails,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_503_after_acting_is_adopted_not_doubled() {
    for listing_fails in [false, true] {
        unknown_resume(
            Agent::UserSession,
            Unknown::Bare503AfterActing,
            listing_fails,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_agents_resume_that_timed_out_after_acting_is_adopted_not_doubled() {
    for listing_fails in [false, true] {
        unknown_resume(
            Agent::SnapshotOnly,
            Unknown::TimeoutAfterActing,
            listing_fails,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_agents_bare_503_after_acting_is_adopted_not_doubled() {
    for listing_fails in [false, true] {
        unknown_resume(
            Agent::SnapshotOnly,
            Unknown::Bare503AfterActing,
            listing_fails,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_agent_whose_session_expired_wakes_again() {
    let world = World::start(Duration::ZERO).await;
    let store = Arc::new(dynamo_store("amb-rewake").await);
    world.register(&store).await;
    let ctl = world.sim.control();
    let marker = uuid::Uuid::new_v4().simple().to_string();
    let (agent_id, snapshot, who) = seed(&world, Agent::SnapshotOnly, &marker);
    let f = resume_fn(store.clone(), world.client(), quick_wake());

    let (status, body) = resume_once(&f, &agent_id, who).await;
    assert_eq!(status, 200, "{body}");
    let first = session_of(&body);
    assert_eq!(live_of(&world, Agent::SnapshotOnly, &agent_id, &marker), 1);

    // The session lives 8 h; 9 h later it has expired (into a snapshot of its own).
    ctl.advance(Duration::from_secs(9 * 3600));
    assert_eq!(live_of(&world, Agent::SnapshotOnly, &agent_id, &marker), 0);
    // An awake record is trusted for `verify_fresh` of real time: let that pass.
    tokio::time::sleep(f.wake.verify_fresh + Duration::from_millis(300)).await;

    let (mut status, mut body) = resume_once(&f, &agent_id, who).await;
    for _ in 0..20 {
        if status != 202 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        (status, body) = resume_once(&f, &agent_id, who).await;
    }
    assert_eq!(status, 200, "woken again, not refused: {body}");
    assert_eq!(body["resumed"], true, "{body}");
    let second = session_of(&body);
    assert_ne!(second, first, "a new session");
    assert_eq!(
        ctl.counters().resumes_of(&snapshot),
        2,
        "one Resume per wake"
    );
    assert_eq!(ctl.counters().received(RESUME), 2);
    assert_eq!(live_of(&world, Agent::SnapshotOnly, &agent_id, &marker), 1);
    assert!(ctl.snapshot(&snapshot).is_some(), "the snapshot is kept");
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap();
    assert_awake(record, &second);
}

/// An unknown Resume, then a reconcile that fails for a moment: the record must keep saying a
/// Resume is unaccounted for, so that no later wake sends a second one while the session it
/// started lives. Step by step: the Resume answers a bare 503 after acting and the holder's
/// listing fails, so it hands polling over (202); nobody asks until the lease has lapsed; the
/// next caller takes the agent over and its reconcile listing fails once, which is still no
/// failure of the wake (202, the agent still `waking` with the Resume unaccounted for); then
/// the agent is woken again, and again, until it answers 200.
async fn unknown_resume_then_failed_reconcile(agent: Agent) {
    let world = World::start(Duration::ZERO).await;
    let store = Arc::new(dynamo_store("amb-reconcile").await);
    world.register(&store).await;
    let ctl = world.sim.control();
    let marker = uuid::Uuid::new_v4().simple().to_string();
    let (agent_id, snapshot, who) = seed(&world, agent, &marker);
    let kit = kit_of(
        &world,
        Some(Fault::error(Some("ListSessions"), "InternalError", 500).next(1)),
    );
    let wake = quick_wake();
    let f = resume_fn(store.clone(), kit, wake.clone());
    let key = AgentKey::new(Kind::Codex, &agent_id);
    let mut answers = Vec::new();

    ctl.inject(Fault::bare(Some(RESUME), 503).after_apply().next(1))
        .unwrap();
    let (status, body) = resume_once(&f, &agent_id, who).await;
    answers.push(status);
    assert_eq!(status, 202, "an unknown Resume, nothing found yet: {body}");
    let held = store.get(&key).await.unwrap().expect("a record");
    assert!(held.resume_sent_at_ms.is_some(), "{held:?}");

    // Nobody asks until the holder's lease (the readiness timeout) has lapsed.
    let lapse = held.lease_until_ms + wake.lock.skew_margin.as_millis() as u64 + 300;
    tokio::time::sleep(Duration::from_millis(
        lapse.saturating_sub(snapwake::ambient::now_ms()),
    ))
    .await;

    // The next holder's reconcile listing fails once.
    ctl.inject(Fault::error(Some("ListSessions"), "InternalError", 500).next(1))
        .unwrap();
    let (status, body) = resume_once(&f, &agent_id, who).await;
    answers.push(status);
    let after_failed_reconcile = store.get(&key).await.unwrap().expect("a record");
    assert_eq!(
        status, 202,
        "a failed reconcile leaves the Resume's outcome unknown, not failed: {body}"
    );
    assert_eq!(
        (
            after_failed_reconcile.state,
            after_failed_reconcile.resume_sent_at_ms,
        ),
        (WakeState::Waking, held.resume_sent_at_ms),
        "the Resume is still unaccounted for: {after_failed_reconcile:?}"
    );

    let mut last = (status, body);
    for _ in 0..40 {
        if last.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        last = resume_once(&f, &agent_id, who).await;
        answers.push(last.0);
    }
    let live = live_of(&world, agent, &agent_id, &marker);
    assert_eq!(
        (ctl.counters().received(RESUME), live),
        (1, 1),
        "(Resumes sent, live sessions) after answers {answers:?}; the record after the failed \
         reconcile: state {}, resume_sent_at_ms {:?}, error {:?}",
        after_failed_reconcile.state,
        after_failed_reconcile.resume_sent_at_ms,
        after_failed_reconcile.error,
    );
    assert_eq!(last.0, 200, "{answers:?}: {}", last.1);
    assert!(ctl.snapshot(&snapshot).is_some(), "the snapshot is kept");
    assert_awake(store.get(&key).await.unwrap(), &session_of(&last.1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_resume_survives_a_failed_reconcile() {
    unknown_resume_then_failed_reconcile(Agent::UserSession).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_agents_unknown_resume_survives_a_failed_reconcile() {
    unknown_resume_then_failed_reconcile(Agent::SnapshotOnly).await;
}
