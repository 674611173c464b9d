//! Short requests (docs/wake-protocol.md, "Short requests"): no caller holds a function while
//! the sandbox boots unless it says `Prefer: wait`, any `SNAPWAKE_WAIT_S` wakes the agent
//! exactly once, and a caller that asks again once the sandbox is ready gets its 200.

use super::*;

/// One caller honouring `Retry-After` (at most `patience`): the final status and session, and
/// how many requests it sent. `prefer`: says `Prefer: wait=<s>`.
async fn honouring_retry_after<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    function: &Resume<S, K>,
    agent_id: &str,
    prefer: Option<u64>,
) -> (u16, String, u32) {
    let until = std::time::Instant::now() + Duration::from_secs(40);
    let mut sent = 0;
    loop {
        let req = alices_request("POST", &path(agent_id));
        let req = match prefer {
            Some(s) => prefer_wait(req, s),
            None => req,
        };
        let resp = function.handle(req).await;
        sent += 1;
        let (status, body) = answer(&resp);
        if status != 202 || std::time::Instant::now() > until {
            return (status, session_id(&body), sent);
        }
        let retry_after: u64 = header_of(&resp, "retry-after")
            .and_then(|v| v.parse().ok())
            .expect("a 202 says when to ask again");
        assert!((1..=2).contains(&retry_after), "Retry-After {retry_after}");
        tokio::time::sleep(Duration::from_secs(retry_after)).await;
    }
}

/// With `SNAPWAKE_WAIT_S` at 0, 1, 3 and 20, a storm of 60 callers (half of them asking to be
/// held for 20 s, which the setting caps) wakes the agent exactly once, and every caller gets
/// the one session. A wait too short for a whole AgentKit request used to answer 503 and never
/// send the Resume at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn any_wait_setting_wakes_a_storm_exactly_once() {
    let (store, world, _) = deployed_shared("short-any-wait", Duration::from_millis(1200)).await;
    for wait_s in [0u64, 1, 3, 20] {
        let (agent_id, snapshot_id) = world.asleep_agent("alice", "Stormy");
        let settings = WakeSettings {
            wait: Duration::from_secs(wait_s),
            ..WakeSettings::default()
        };
        let function = Arc::new(resume_fn(store.clone(), world.client(), settings));
        let callers: Vec<_> = (0..60)
            .map(|i| {
                let function = function.clone();
                let agent_id = agent_id.clone();
                let prefer = (i % 2 == 0).then_some(20);
                tokio::spawn(
                    async move { honouring_retry_after(&function, &agent_id, prefer).await },
                )
            })
            .collect();
        let mut sessions = std::collections::HashSet::new();
        for c in callers {
            let (status, sid, _) = c.await.unwrap();
            assert_eq!(status, 200, "SNAPWAKE_WAIT_S={wait_s}");
            sessions.insert(sid);
        }
        let counters = world.sim.control().counters();
        assert_eq!(
            counters.resumes_of(&snapshot_id),
            1,
            "SNAPWAKE_WAIT_S={wait_s}: exactly one Resume"
        );
        assert_eq!(sessions.len(), 1, "SNAPWAKE_WAIT_S={wait_s}: one session");
        assert_eq!(counters.live_sessions_of(&agent_id), 1);
    }
}

/// A short request's answers: the holder's 202 comes before the session is Ready, a joiner's
/// at once from the record, and `Prefer: wait` is granted up to `SNAPWAKE_WAIT_S` and said so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_requests_answer_before_the_boot_and_prefer_wait_holds_them() {
    let (store, world, _) = deployed_shared("short-answers", Duration::from_secs(3)).await;
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Booting");
    let settings = WakeSettings {
        wait: Duration::from_secs(2),
        ..WakeSettings::default()
    };
    let f = resume_fn(store.clone(), world.client(), settings);
    let ctl = world.sim.control();

    // The holder: Resume sent and its session recorded, then 202 while it boots.
    let resp = f.handle(alices_request("POST", &path(&agent_id))).await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 202, "{body}");
    let sid = body["wake"]["session_id"].as_str().unwrap().to_string();
    assert!(
        ctl.session(&sid)
            .is_some_and(|s| s.status.as_deref() != Some("Ready")),
        "answered while the session was still starting"
    );
    assert_eq!(header_of(&resp, "retry-after"), Some("1"));
    assert_eq!(header_of(&resp, "preference-applied"), None);
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.session_id.as_deref(), Some(sid.as_str()));
    assert!(record.awaited_since_ms > 0, "{record:?}");

    // A joiner: the same session from the record, and no AgentKit call while the poll lease
    // of the holder's question holds.
    let calls = agentkit_calls(&ctl);
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
    let after = agentkit_calls(&ctl);
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["wake"]["session_id"], sid.as_str());
    assert!(after - calls <= 1, "at most the one poll the lease allows");

    // `Prefer: wait=20` is granted the 2 s `SNAPWAKE_WAIT_S` allows, and says so.
    let resp = f
        .handle(prefer_wait(alices_request("POST", &path(&agent_id)), 20))
        .await;
    assert_eq!(header_of(&resp, "preference-applied"), Some("wait=2"));
    // An unreadable preference is ignored: a short request, no Preference-Applied.
    let mut req = alices_request("POST", &path(&agent_id));
    req.headers_mut()
        .insert("prefer", "wait=soon".parse().unwrap());
    let resp = f.handle(req).await;
    assert_eq!(header_of(&resp, "preference-applied"), None);
    assert_eq!(ctl.counters().resumes_of(&snapshot_id), 1);
}

/// Once the sandbox is Ready, the first ask that finds the poll lease free asks AgentKit,
/// completes the wake and answers 200; everyone after it answers 200 from the record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_ask_after_readiness_sees_200() {
    let (store, world, _) = deployed_shared("short-after-ready", Duration::from_millis(1500)).await;
    let (agent_id, _) = world.asleep_agent("alice", "Ready soon");
    let f = resume_fn(store.clone(), world.client(), WakeSettings::default());
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
    assert_eq!(status, 202, "{body}");
    let sid = body["wake"]["session_id"].as_str().unwrap().to_string();
    let ctl = world.sim.control();
    let ready = |ctl: &snapwake_sim::SimControl| {
        ctl.session(&sid)
            .is_some_and(|s| s.status.as_deref() == Some("Ready"))
    };
    while !ready(&ctl) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Nobody asked since the holder: its poll lease (one pause, 0.25 s) is the only wait.
    let key = AgentKey::new(Kind::Codex, &agent_id);
    let record = store.get(&key).await.unwrap().unwrap();
    wait_until(record.poll_until_ms + 1).await;
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(session_id(&body), sid);
    assert_eq!(body["resumed"], true);
    let record = store.get(&key).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Awake);
    // The next caller: 200 from the record, without asking AgentKit.
    let calls = ctl.counters().received("GetSession");
    let (status, _) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
    assert_eq!(status, 200);
    assert_eq!(ctl.counters().received("GetSession"), calls);
}

/// A storm whose wake fails for sure (the new session is gone at its first poll): every caller
/// learns it (502, retryable, `Retry-After` the time the failure stays the answer), and none
/// of them starts a second wake; a retry after that wakes the agent (without a second Resume).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_storm_whose_wake_fails_starts_no_second_wake() {
    let (store, world, _) =
        deployed_shared("short-failed-storm", Duration::from_millis(1500)).await;
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Doomed");
    let ctl = world.sim.control();
    ctl.inject(Fault::error(Some("GetSession"), "InvalidResource.NotFound", 404).next(1))
        .unwrap();
    let function = Arc::new(resume_fn(
        store.clone(),
        world.client(),
        WakeSettings::default(),
    ));
    let callers: Vec<_> = (0..40)
        .map(|i| {
            let function = function.clone();
            let agent_id = agent_id.clone();
            tokio::spawn(async move {
                // Arriving over the first 400 ms.
                tokio::time::sleep(Duration::from_millis(10 * i)).await;
                let resp = function
                    .handle(alices_request("POST", &path(&agent_id)))
                    .await;
                let (status, body) = answer(&resp);
                if status != 202 {
                    return (
                        status,
                        body,
                        header_of(&resp, "retry-after").map(String::from),
                    );
                }
                let (status, _, _) = honouring_retry_after(&function, &agent_id, None).await;
                (status, serde_json::Value::Null, None)
            })
        })
        .collect();
    for c in callers {
        let (status, body, retry_after) = c.await.unwrap();
        assert_eq!(status, 502, "{body}");
        if !body.is_null() {
            assert_eq!(body["retryable"], true, "{body}");
            assert_eq!(retry_after.as_deref(), Some("3"), "{body}");
        }
    }
    assert_eq!(ctl.counters().resumes_of(&snapshot_id), 1, "no second wake");
    assert!(
        ctl.snapshot(&snapshot_id).is_some(),
        "the snapshot is intact"
    );

    outcome_forgotten().await;
    let (status, _, _) = honouring_retry_after(&function, &agent_id, None).await;
    assert_eq!(status, 200);
    // AgentKit had started that session after all (only its first poll said NotFound): the
    // retry adopts it rather than start a second one.
    assert_eq!(ctl.counters().resumes_of(&snapshot_id), 1);
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1);
}
