//! Faults and slowness, on both store adapters: a failed Resume keeps the snapshot, and slow
//! readiness answers 202 and then 200.

use super::*;

// ---------------------------------------------------------------------------------------------
// Faults and slowness, on both store adapters

/// Two ways a wake fails for sure: AgentKit refuses the Resume (throttled through every retry,
/// so it surely did not act), or the resumed session ends before it is Ready. Either way the
/// record says `failed`, the snapshot is untouched, and the next resume wakes the agent with
/// one live session in all.
async fn failed_resume_keeps_the_snapshot<
    S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore + Clone,
>(
    store: S,
) {
    let world = World::registered(Duration::ZERO, &store).await;
    let ctl = world.sim.control();
    let f = resume_fn(store.clone(), world.client(), quick());
    let key = |id: &str| AgentKey::new(Kind::Codex, id);

    // A refusal: 429 on the first attempt and both retries.
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Refused");
    ctl.inject(Fault::error(Some("ResumeSessionFromSnapshot"), "Throttling", 429).next(3))
        .unwrap();
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
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
    // Throttling is a refusal to try, not how a wake ended: a retry at once is a new wake.
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
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
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
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
    // Asked again at once (a caller polling the wake that failed): the same failure, and
    // nothing sent to AgentKit.
    let calls = agentkit_calls(&ctl);
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
    assert_eq!(
        (status, body["retryable"].as_bool()),
        (502, Some(true)),
        "{body}"
    );
    let after = agentkit_calls(&ctl);
    assert_eq!(after, calls, "the failure answered from the record");
    // Still wakeable (once the failure is no longer the answer); the session AgentKit did
    // start is adopted, not doubled.
    outcome_forgotten().await;
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(ctl.counters().resumes_of(&snapshot_id), 1);
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1);
}

async fn slow_readiness_answers_202_then_200<
    S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore + Clone,
>(
    store: S,
) {
    // Readiness takes longer than a request may wait (`SNAPWAKE_WAIT_S` 2.5 s here).
    let world = World::registered(Duration::from_millis(3500), &store).await;
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Sleepy");
    let settings = WakeSettings {
        wait: Duration::from_millis(2500),
        ready_timeout: Duration::from_secs(8),
        ..quick()
    };
    let f = resume_fn(store.clone(), world.client(), settings);
    // A short request (no `Prefer`): the Resume is sent, the session recorded, and the answer
    // is a 202 at once, not after the wait.
    let started = std::time::Instant::now();
    let resp = f.handle(alices_request("POST", &path(&agent_id))).await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 202, "{body}");
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "it did not wait"
    );
    assert_eq!(body["state"], "waking");
    assert_eq!(resp.headers()["retry-after"], "1");
    assert!(resp.headers().get("preference-applied").is_none());
    assert_eq!(
        resp.headers()["location"],
        format!("/v1/agents/codex/{agent_id}")
    );
    assert_eq!(world.sim.control().counters().resumes_of(&snapshot_id), 1);
    let waking_session = body["wake"]["session_id"].as_str().unwrap().to_string();

    // A client that wants to be held says so; it gets what `SNAPWAKE_WAIT_S` allows (2 whole
    // seconds of the 2.5), and the boot outlasts that too.
    let resp = f
        .handle(prefer_wait(alices_request("POST", &path(&agent_id)), 20))
        .await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 202, "{body}");
    assert_eq!(resp.headers()["preference-applied"], "wait=2");
    assert_eq!(body["wake"]["session_id"], waking_session.as_str());

    tokio::time::sleep(Duration::from_millis(1200)).await;
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
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
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
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

/// A throttled Resume ends inside the window its marker opened. The holder writes "a Resume
/// is on its way" and then sends it; past `sent_at + ready_timeout` the next holder takes that
/// Resume for lost and sends its own. Here AgentKit answers the first two attempts 429 (the
/// test client waits 1 s between attempts), so the third would land at ~2 s, after a second
/// caller (1.7 s) has taken over: stopping the retries at the window's end leaves one Resume
/// that acted and one live session, where retrying past it started two sandboxes.
async fn throttled_resume_ends_inside_its_window<
    S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore + Clone + 'static,
>(
    store: S,
) {
    let world = World::registered(Duration::ZERO, &store).await;
    let ctl = world.sim.control();
    // A 1 s lock, readiness given up after 1.5 s (less a 200 ms skew margin: a 1.3 s window),
    // a 1.2 s wait: the first caller's lease is gone by the time the second comes.
    let wake = wake_settings(
        Duration::from_secs(1),
        Duration::from_millis(1500),
        Duration::from_millis(1200),
    );
    let f = Arc::new(resume_fn(store.clone(), world.client(), wake));
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Throttled");
    ctl.inject(
        Fault::error(Some("ResumeSessionFromSnapshot"), "Throttling", 429)
            .retry_after(1)
            .next(2),
    )
    .unwrap();

    let callers: Vec<_> = [0u64, 1700]
        .into_iter()
        .map(|after| {
            let (f, agent_id) = (f.clone(), agent_id.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(after)).await;
                let mut answers = Vec::new();
                for _ in 0..40 {
                    let resp = f.handle(alices_request("POST", &path(&agent_id))).await;
                    let (status, body) = answer(&resp);
                    answers.push(status);
                    match status {
                        200 => return (answers, body),
                        // What a client does with a retryable answer: ask again shortly.
                        202 | 409 | 429 | 503 => {
                            tokio::time::sleep(Duration::from_millis(250)).await
                        }
                        _ => panic!("{answers:?} {body}"),
                    }
                }
                panic!("never 200: {answers:?}");
            })
        })
        .collect();
    let mut sessions = Vec::new();
    for caller in callers {
        let (answers, body) = caller.await.unwrap();
        eprintln!("answers {answers:?}");
        sessions.push(session_id(&body));
    }
    assert_eq!(sessions[0], sessions[1], "one session for both callers");
    assert_eq!(
        ctl.counters().resumes_of(&snapshot_id),
        1,
        "one Resume acted"
    );
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1);
    assert!(ctl.snapshot(&snapshot_id).is_some(), "the snapshot is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_resume_ends_inside_its_window_in_memory() {
    throttled_resume_ends_inside_its_window(Arc::new(MemoryStore::new())).await;
}
