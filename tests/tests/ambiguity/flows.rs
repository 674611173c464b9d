//! Part 1's flows: one (site, mode) scenario driven through wake, delete, create or sleep and
//! retried until it settles, and [`run_sites`], which runs every site of some flows.

use super::checks::*;
use super::faulty_store::*;
use super::world::*;
use super::write_sites::*;
use super::*;

// ---------------------------------------------------------------------------------------------
// The flows

pub(crate) fn table(site: &Site, mode: Mode, times: u32) -> String {
    let mode = match mode {
        Mode::LandLoseAnswer => "lost",
        Mode::TimeoutNoLand => "timeout",
    };
    let name: String = site
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("amb-{mode}x{times}-{name}")
}

pub(crate) fn quick_slow() -> WakeSettings {
    // Readiness (3.5 s) takes longer than one request may wait (2.5 s, which still leaves one
    // whole AgentKit request timeout for the Resume).
    WakeSettings {
        wait: Duration::from_millis(2500),
        ready_timeout: Duration::from_secs(8),
        ..quick_wake()
    }
}

/// A wait of 3 s (one whole AgentKit request timeout left for the CreateSessionSnapshot, with
/// room to spare on a busy machine); [`SLOW_SNAPSHOT`] is longer.
pub(crate) fn sleep_slow() -> WakeSettings {
    WakeSettings {
        wait: Duration::from_secs(3),
        ..quick_wake()
    }
}

/// How long a snapshot of [`Flow::SleepSlow`] stays `Creating`: longer than the holder's wait,
/// short enough that the next caller sees it Ready with a request timeout left to end the
/// session.
pub(crate) const SLOW_SNAPSHOT: Duration = Duration::from_millis(3500);
/// How long the snapshot of the other sleep flows stays `Creating`.
pub(crate) const QUICK_SNAPSHOT: Duration = Duration::from_millis(300);

/// Run one (site, mode), the fault firing on `times` writes of the site. Once: the lock's
/// re-send resolves it, so every caller sees the flow as if nothing happened. As many times as
/// the lock sends a write: the write stays ambiguous for that caller, which may answer 503
/// (or, a lease left behind, 409/202 to the next callers) until the flow converges.
pub(crate) async fn scenario(site: &'static Site, mode: Mode, times: u32) {
    let (delay, wake) = match site.flow {
        Flow::WakeSlow => (Duration::from_millis(3500), quick_slow()),
        Flow::SleepSlow => (Duration::ZERO, sleep_slow()),
        _ => (Duration::ZERO, quick_wake()),
    };
    let env = Env::new(&table(site, mode, times), delay, wake).await;
    let mut guard = AnswersOnPanic::new(&env);
    flow(&env, site, mode, times).await;
    guard.done = true;
}

/// Prints every answer of a flow that panicked.
pub(crate) struct AnswersOnPanic<'e> {
    pub(crate) env: &'e Env,
    pub(crate) done: bool,
}

impl<'e> AnswersOnPanic<'e> {
    pub(crate) fn new(env: &'e Env) -> Self {
        AnswersOnPanic { env, done: false }
    }
}

impl Drop for AnswersOnPanic<'_> {
    fn drop(&mut self) {
        if !self.done {
            eprintln!("answers: {}", self.env.answers());
        }
    }
}

pub(crate) async fn flow(env: &Env, site: &'static Site, mode: Mode, times: u32) {
    let ctl = env.world.sim.control();
    let arm = || env.store.arm(site.recognise, mode, times);
    // What callers may answer before the flow settles, beyond the flow's own: with a write
    // that stays ambiguous, a 503; a lease left behind is waited out (409 for a delete or a
    // create).
    let persistent = times > 1;
    let extra: &[u16] = if persistent { &[409, 503] } else { &[] };
    let with = |own: &[u16]| -> Vec<u16> { own.iter().chain(extra).copied().collect() };

    match site.flow {
        Flow::Wake | Flow::WakeFailing | Flow::WakeSlow | Flow::WakeUnknown => {
            let (agent, snapshot) = env.world.asleep_agent("alice", "Ambiguous");
            let op = Op::Resume(agent.clone());
            let mut meanwhile = vec![202];
            match site.flow {
                Flow::WakeFailing => {
                    ctl.inject(
                        Fault::error(Some("GetSession"), "InvalidResource.NotFound", 404).next(1),
                    )
                    .unwrap();
                    meanwhile.push(502);
                }
                Flow::WakeUnknown => {
                    ctl.inject(Fault::bare(Some(RESUME), 503).after_apply().next(1))
                        .unwrap();
                    // The holder's listing after the Resume fails (a 500 is not retried).
                    *env.kit.on_resume.lock().unwrap() =
                        Some(Fault::error(Some("ListSessions"), "InternalError", 500).next(1));
                }
                _ => {}
            }
            arm();
            let body = env.until(&op, 200, &with(&meanwhile)).await;
            env.store.disarm();
            let session = session_of(&body);
            assert_eq!(env.resumes(), 1, "one Resume in all");
            assert_eq!(ctl.counters().resumes_of(&snapshot), 1);
            assert_eq!(ctl.counters().live_sessions_of(&agent), 1);
            assert!(ctl.snapshot(&snapshot).is_some(), "the snapshot is kept");
            assert!(ctl.session(&session).is_some_and(|s| s.is_active()));
            if !persistent {
                assert_awake(env.record(&agent).await, &session);
            }
            // Settled: the next caller gets the same session (a holder that could not record
            // its completion leaves it to this caller).
            let again = env.until(&op, 200, &with(&[202])).await;
            assert_eq!(session_of(&again), session);
            assert_eq!(env.resumes(), 1);
            assert_awake(env.record(&agent).await, &session);
            // Last, as it is the least of the checks: a 200 says awake, in its body too.
            assert_eq!(
                body["state"], "awake",
                "a 200 whose body says otherwise (the record could not be completed): {body}"
            );
        }
        Flow::Verify => {
            let (agent, snapshot) = env.world.asleep_agent("alice", "Ambiguous");
            let op = Op::Resume(agent.clone());
            let first = env.until(&op, 200, &[202]).await;
            let session = session_of(&first);
            // An awake record is trusted for `verify_fresh`; after that one caller checks the
            // session.
            tokio::time::sleep(env.resume.wake.verify_fresh + Duration::from_millis(300)).await;
            arm();
            let body = env.until(&op, 200, &with(&[202])).await;
            env.store.disarm();
            assert_eq!(session_of(&body), session, "the same session: {body}");
            assert_eq!(body["resumed"], false, "{body}");
            assert_eq!(env.resumes(), 1, "one Resume in all");
            assert_eq!(ctl.counters().live_sessions_of(&agent), 1);
            assert!(ctl.snapshot(&snapshot).is_some(), "the snapshot is kept");
            assert_awake(env.record(&agent).await, &session);
        }
        Flow::DeleteSnapshot => {
            let (agent, newest) = env.world.asleep_agent("alice", "Ambiguous");
            let older = env.world.more_snapshots("alice", &agent, 1).remove(0);
            arm();
            let op = Op::DeleteSnapshot(agent.clone(), newest.clone());
            env.until(&op, 204, &with(&[])).await;
            env.store.disarm();
            assert!(ctl.snapshot(&newest).is_none(), "the snapshot deleted");
            assert!(ctl.snapshot(&older).is_some(), "the other snapshot kept");
            assert_eq!(env.world.snapshots_of(&agent), vec![older.clone()]);
            let r = env.record(&agent).await.expect("a record");
            if persistent && r.state == WakeState::Deleting {
                // The hand-back stayed ambiguous: the lease lapses by itself.
                assert!(r.lease_until_ms > 0, "{r:?}");
            } else {
                assert_eq!(r.state, WakeState::Asleep, "back to rest: {r:?}");
                assert!(r.holder.is_none() && r.lease_until_ms == 0, "{r:?}");
            }
            // Still wakeable, from the snapshot left.
            let body = env
                .until(&Op::Resume(agent.clone()), 200, &with(&[202]))
                .await;
            assert_eq!(ctl.counters().resumes_of(&older), 1);
            assert_eq!(ctl.counters().resumes_of(&newest), 0);
            assert_eq!(env.resumes(), 1);
            assert_eq!(ctl.counters().live_sessions_of(&agent), 1);
            assert_awake(env.record(&agent).await, &session_of(&body));
            // A repeat of the delete is done already.
            env.until(&op, 204, &[]).await;
            assert!(ctl.snapshot(&older).is_some());
        }
        Flow::DeleteAgent => {
            let (agent, snapshot) = env.world.asleep_agent("alice", "Ambiguous");
            let older = env.world.more_snapshots("alice", &agent, 1).remove(0);
            let body = env.until(&Op::Resume(agent.clone()), 200, &[202]).await;
            let session = session_of(&body);
            arm();
            env.until(&Op::DeleteAgent(agent.clone()), 204, &with(&[]))
                .await;
            env.store.disarm();
            assert_eq!(
                ctl.counters().live_sessions_of(&agent),
                0,
                "no live session"
            );
            assert!(ctl.session(&session).is_none_or(|s| !s.is_active()));
            assert!(ctl.snapshot(&snapshot).is_none() && ctl.snapshot(&older).is_none());
            assert!(env.world.snapshots_of(&agent).is_empty());
            let r = env.record(&agent).await.expect("a tombstone");
            assert_eq!(r.state, WakeState::Gone, "{r:?}");
            assert!(r.holder.is_none() && r.expires_at.is_some_and(|t| t > now_s()));
            // Gone for good: a resume is 410 and wakes nothing; a repeat delete is 204.
            let (status, body) = env.call(&Op::Resume(agent.clone())).await;
            assert_eq!(status, 410, "{body}");
            env.until(&Op::DeleteAgent(agent.clone()), 204, &[]).await;
            assert_eq!(env.resumes(), 1, "only the first wake's Resume");
            assert_eq!(ctl.counters().live_sessions_of(&agent), 0);
        }
        Flow::Create | Flow::CreateFails | Flow::CreateUnsettled => {
            let key = uuid::Uuid::new_v4().simple().to_string();
            let op = Op::Create(key);
            let mut meanwhile = vec![];
            if site.flow == Flow::CreateFails {
                ctl.inject(Fault::error(Some("CreateSession"), "InvalidParameter", 400).next(1))
                    .unwrap();
                meanwhile.push(502);
                // A retire that never lands leaves the attempt (`create_sent_at`) in the
                // record: retries then wait its window out (202) before creating.
                meanwhile.push(202);
            }
            if site.flow == Flow::CreateUnsettled {
                ctl.inject(
                    Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500).next(1),
                )
                .unwrap();
                meanwhile.push(202);
            }
            arm();
            let body = env.until(&op, 201, &with(&meanwhile)).await;
            env.store.disarm();
            let agent = body["agent_id"].as_str().unwrap().to_string();
            let session = session_of(&body);
            assert_eq!(ctl.counters().live_sessions_of(&agent), 1, "one session");
            assert_eq!(ctl.counters().succeeded("CreateSession"), 1);
            assert_eq!(ctl.sessions().len(), 1, "no session of another attempt");
            let r = env.record(&agent).await.expect("a record");
            assert_eq!(r.state, WakeState::Awake, "{r:?}");
            assert!(r.holder.is_none() && r.lease_until_ms == 0, "{r:?}");
            assert_eq!(r.session_id.as_deref(), Some(session.as_str()), "{r:?}");
            assert!(r.expires_at.is_none(), "not retired: {r:?}");
            // The same key again replays the answer: no second session.
            let again = env.until(&op, 201, &[]).await;
            assert_eq!(again["agent_id"], body["agent_id"]);
            assert_eq!(ctl.counters().live_sessions_of(&agent), 1);
            assert_eq!(ctl.counters().succeeded("CreateSession"), 1);
        }
        // Boxed: the sleep flows would make this future too large for a worker's stack.
        Flow::Sleep | Flow::SleepSlow => {
            Box::pin(sleep_flow(env, site, persistent, &arm, &with)).await
        }
        Flow::SleepFailing => Box::pin(failing_sleep_flow(env, persistent, &arm, &with)).await,
    }
    assert!(
        env.store.fired() >= 1,
        "the fault never fired: the flow did not reach the site"
    );
}

/// [`Flow::Sleep`] and [`Flow::SleepSlow`]: wake, sleep with the site armed, sleep again,
/// wake again.
pub(crate) async fn sleep_flow(
    env: &Env,
    site: &'static Site,
    persistent: bool,
    arm: &(dyn Fn() + Sync),
    with: &(dyn Fn(&[u16]) -> Vec<u16> + Sync),
) {
    let ctl = env.world.sim.control();
    let (agent, session, before) = woken_for_a_sleep(env).await;
    ctl.set_snapshot_ready_delay(if site.flow == Flow::SleepSlow {
        SLOW_SNAPSHOT
    } else {
        QUICK_SNAPSHOT
    });
    let op = Op::Sleep(agent.clone());
    arm();
    let body = env.until(&op, 200, &with(&[202])).await;
    env.store.disarm();
    // A snapshot that could never be named (every resend of that write timed out without
    // landing) leaves a sleep whose lease lapses: the next sleep starts over with a snapshot of
    // its own. Only that site, with the fault on every resend, may take two.
    let starts_over = persistent
        && site.name == "sleep: name the snapshot"
        && ctl.counters().received("CreateSessionSnapshot") == 2;
    let snapshot = if starts_over {
        env.assert_slept_anew(&agent, &session, &before).await
    } else {
        env.assert_slept(&agent, &session, &before, 1)
    };
    if !persistent {
        assert_asleep(env.record(&agent).await, &snapshot, true);
    }
    // Settled: the next caller finds it asleep (and records it so, if the sleep's
    // last write stayed ambiguous).
    let again = env.until(&op, 200, &with(&[202])).await;
    assert_eq!(again["state"], "asleep", "{again}");
    let settled = if starts_over {
        env.assert_slept_anew(&agent, &session, &before).await
    } else {
        env.assert_slept(&agent, &session, &before, 1)
    };
    assert_eq!(settled, snapshot);
    assert_asleep(env.record(&agent).await, &snapshot, false);
    // Woken again, from the snapshot the sleep took.
    let woke = env.until(&Op::Resume(agent.clone()), 200, &[202]).await;
    assert_eq!(woke["resumed"], true, "{woke}");
    assert_eq!(
        ctl.counters().resumes_of(&snapshot),
        1,
        "woken from the snapshot the sleep took"
    );
    assert_eq!(ctl.counters().live_sessions_of(&agent), 1);
    assert_eq!(env.resumes(), 2, "the first wake and the last");
    // Last: the first 200 says asleep, that it slept, and names the snapshot.
    assert_eq!(
        (body["state"].as_str(), body["slept"].as_bool()),
        (Some("asleep"), Some(true)),
        "{body}"
    );
    assert_eq!(
        body["snapshots"][0]["snapshot_id"],
        snapshot.as_str(),
        "{body}"
    );
}

/// An agent asleep for an hour, then woken: its id, its session and its snapshots before
/// whatever sleep comes next.
pub(crate) async fn woken_for_a_sleep(env: &Env) -> (String, String, Vec<String>) {
    let ctl = env.world.sim.control();
    let (agent, _) = asleep_since(&env.world, ctl.now() - AN_HOUR);
    let woke = env.until(&Op::Resume(agent.clone()), 200, &[202]).await;
    let session = session_of(&woke);
    let before = env.world.snapshots_of(&agent);
    (agent, session, before)
}

/// [`Flow::SleepFailing`]: wake, a sleep whose snapshot fails with the site armed (502, awake),
/// then a sleep that goes through, then wake again.
pub(crate) async fn failing_sleep_flow(
    env: &Env,
    persistent: bool,
    arm: &(dyn Fn() + Sync),
    with: &(dyn Fn(&[u16]) -> Vec<u16> + Sync),
) {
    let ctl = env.world.sim.control();
    let (agent, session, before) = woken_for_a_sleep(env).await;
    ctl.set_snapshot_ready_delay(QUICK_SNAPSHOT);
    ctl.set_snapshot_outcome("Failed");
    let op = Op::Sleep(agent.clone());
    arm();
    let failed = env.until(&op, 502, &with(&[202])).await;
    env.store.disarm();
    assert_eq!(failed["retryable"], true, "{failed}");
    assert_eq!(ctl.counters().received("CreateSessionSnapshot"), 1);
    assert!(
        env.kit.endings().is_empty(),
        "a session was ended though its snapshot failed: {:?}",
        env.kit.endings()
    );
    assert!(
        ctl.session(&session).is_some_and(|s| s.is_active()),
        "the session lives on"
    );
    if !persistent {
        let r = env.record(&agent).await.expect("a record");
        assert_eq!(r.state, WakeState::Awake, "{r:?}");
        assert!(r.holder.is_none() && r.lease_until_ms == 0, "{r:?}");
        assert_eq!(r.session_id.as_deref(), Some(session.as_str()), "{r:?}");
        assert!(r.error.is_some(), "the reason is kept: {r:?}");
    }
    // A good snapshot next: the sleep goes through (a failed sleep the record still
    // shows is settled first, and answers 502 once more).
    ctl.set_snapshot_outcome("Ready");
    let body = env.until(&op, 200, &with(&[202, 502])).await;
    let snapshot = env.assert_slept(&agent, &session, &before, 2);
    if !persistent {
        assert_asleep(env.record(&agent).await, &snapshot, true);
    }
    let again = env.until(&op, 200, &with(&[202])).await;
    assert_eq!(again["state"], "asleep", "{again}");
    assert_asleep(env.record(&agent).await, &snapshot, false);
    let woke = env.until(&Op::Resume(agent.clone()), 200, &[202]).await;
    assert_eq!(woke["resumed"], true, "{woke}");
    assert_eq!(ctl.counters().resumes_of(&snapshot), 1);
    assert_eq!(ctl.counters().live_sessions_of(&agent), 1);
    assert_eq!(
        (body["state"].as_str(), body["slept"].as_bool()),
        (Some("asleep"), Some(true)),
        "{body}"
    );
}

/// Run every (site, mode) of `flows` with the fault firing `times` times, each in its own
/// task, and report all failures at once.
///
/// The scenarios run on workers with 8 MiB stacks: a whole flow (wake, sleep, create, delete,
/// each through its handler) inlined in one future is several hundred KiB of stack in a debug
/// build, which the default 2 MiB worker does not always hold beside the handler's own frames.
/// Release builds (what runs in Lambda) are a fraction of that.
pub(crate) async fn run_sites(flows: &[Flow], times: u32) {
    let workers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(8 << 20)
        .enable_all()
        .build()
        .expect("a runtime for the scenarios");
    let mut failures = Vec::new();
    for site in SITES.iter().filter(|s| flows.contains(&s.flow)) {
        for mode in MODES {
            let started = Instant::now();
            let outcome = workers.spawn(scenario(site, mode, times)).await;
            let took = started.elapsed();
            match outcome {
                Ok(()) => eprintln!("ok    {:<40} {mode:?} x{times} ({took:.1?})", site.name),
                Err(e) => {
                    let why = match e.try_into_panic() {
                        Ok(p) => p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default(),
                        Err(e) => e.to_string(),
                    };
                    eprintln!(
                        "FAIL  {:<40} {mode:?} x{times} ({took:.1?}): {why}",
                        site.name
                    );
                    failures.push(format!("{} / {mode:?} x{times}: {why}", site.name));
                }
            }
        }
    }
    workers.shutdown_background();
    assert!(
        failures.is_empty(),
        "{} scenario(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// How many times the lock sends one write before the record decides.
pub(crate) fn write_attempts() -> u32 {
    LockSettings::default().write_attempts
}
