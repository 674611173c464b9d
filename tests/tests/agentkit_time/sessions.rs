//! Sessions on AgentKit's time: one stuck starting fails at the readiness timeout and is ended
//! before the next wake, one in an undocumented status is never woken beside nor put to sleep,
//! many callers of a slow session draw one poller, and a Resume applied late is adopted.

use super::*;

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
    outcome_forgotten().await;
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
    seed_paused(&env, &agent_id);
    for _ in 0..2 {
        // Each a new wake, not a caller learning how the last one ended.
        outcome_forgotten().await;
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
        .handle(alices_request(
            "GET",
            &format!("/v1/agents/codex/{agent_id}"),
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
    seed_paused(&env, &agent_id);
    let path = format!("/v1/agents/codex/{agent_id}/sleep");
    let resp = env.resume.handle(alices_request("POST", &path)).await;
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
    outcome_forgotten().await;
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(10))
        .await;
    assert_eq!(status, 200, "{body}");
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&snapshot), 2);
    assert_eq!(counters.received("DeleteSession"), 1);
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}

/// A session of `agent_id` in a status snapwake does not know (`Paused`).
fn seed_paused(env: &Env, agent_id: &str) {
    let ctl = env.world.sim.control();
    ctl.seed_session(snapwake_sim::SeedSession {
        tool_id: env.world.recoverable.clone(),
        user_session_id: Some(agent_id.to_string()),
        status: Some("Paused".into()),
        ..Default::default()
    })
    .unwrap();
}
