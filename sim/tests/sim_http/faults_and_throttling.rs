//! Throttling and faults: tool writes above three per second throttled, faults by count, rate,
//! latency and after applying, rate faults repeatable for a seed, and actions that fail now and
//! apply late.

use super::*;

#[tokio::test]
async fn tool_writes_above_three_per_second_are_throttled() {
    let (_s, ctl, c) = sim().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let a = c
            .call("CreateTool", create_tool_body(&format!("t{i}")))
            .await;
        ids.push(a.result()["ToolId"].as_str().unwrap().to_string());
    }
    // The window is shared with UpdateTool.
    let a = c
        .call(
            "UpdateTool",
            json!({"ToolId": ids[0], "EnableSnapshot": false}),
        )
        .await;
    assert_eq!((a.status, a.code()), (429, "Throttling"));
    let secs: u64 = a.retry_after.as_deref().unwrap().parse().unwrap();
    assert!(secs >= 1);
    let counters = ctl.counters();
    assert_eq!(counters.throttled, 1);
    assert_eq!(counters.max_tool_writes_per_second, 3);
    assert_eq!(counters.received("UpdateTool"), 1);
    assert_eq!(counters.succeeded("UpdateTool"), 0);
    // Reads are not throttled.
    c.call("GetTool", json!({"ToolId": ids[0]})).await.result();

    ctl.set_tool_write_limit(None);
    ctl.reset_counters();
    for i in 0..5 {
        c.call("CreateTool", create_tool_body(&format!("u{i}")))
            .await
            .result();
    }
    let counters = ctl.counters();
    assert_eq!(counters.max_tool_writes_per_second, 5);
    assert_eq!(counters.throttled, 0);
}

/// AgentKit's account-wide limits: each action its own sliding second, shared by every caller
/// (two clients here), refused with 429 `Throttling` and a `Retry-After`, and counted.
#[tokio::test]
async fn every_action_is_limited_account_wide_when_the_agentkit_limits_are_on() {
    let s = Simulator::start(SimConfig {
        rate_limits: snapwake_sim::RateLimits::agentkit()
            .with("ResumeSessionFromSnapshot", Some(4)),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let ctl = s.control();
    let (a, b) = (Caller::new(&s.endpoint()), Caller::new(&s.endpoint()));
    let t = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    let snapshot = ctl
        .seed_snapshot(SeedSnapshot {
            tool_id: t.clone(),
            user_session_id: Some("u-1".into()),
            ..Default::default()
        })
        .unwrap();
    let resume =
        json!({"ToolId": t, "SnapshotId": snapshot, "Ttl": 28800, "CreateNewInstance": false});
    let mut answers = Vec::new();
    for i in 0..6 {
        let caller = if i % 2 == 0 { &a } else { &b };
        answers.push(
            caller
                .call("ResumeSessionFromSnapshot", resume.clone())
                .await,
        );
    }
    let refused: Vec<_> = answers.iter().filter(|a| a.status == 429).collect();
    assert_eq!(
        refused.len(),
        2,
        "two callers share one account's limit of 4"
    );
    for r in &refused {
        assert_eq!(r.code(), "Throttling");
        let secs: u64 = r.retry_after.as_deref().unwrap().parse().unwrap();
        assert!((1..=1).contains(&secs), "{secs}");
    }
    // Listing is limited by its own window (50 a second), untouched by the Resumes.
    a.call("ListSessions", json!({"ToolId": t})).await.result();

    let c = ctl.counters();
    let resumes = c.limit("ResumeSessionFromSnapshot");
    assert_eq!(
        (
            resumes.limit,
            resumes.accepted,
            resumes.refused,
            resumes.most_in_a_second
        ),
        (Some(4), 4, 2, 4)
    );
    assert_eq!(c.limit("ListSessions").limit, Some(50));
    assert_eq!(c.throttled, 2);
    assert_eq!(
        c.resumes_of(&snapshot),
        4,
        "a refused Resume started nothing"
    );

    // After the window has slid, Resume is accepted again.
    tokio::time::sleep(Duration::from_millis(1050)).await;
    a.call("ResumeSessionFromSnapshot", resume).await.result();
}

/// The limits can be changed on a running simulator, over the control surface too; an
/// unknown action is refused rather than silently limiting nothing.
#[tokio::test]
async fn rate_limits_are_set_and_read_over_the_control_surface() {
    let (s, ctl, c) = sim().await;
    let post = |body: Value| {
        let url = format!("{}/_sim/settings", s.endpoint());
        async move {
            reqwest::Client::new()
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    let r = post(json!({"rate_limits": {"GetTool": 1, "ToolWrites": null}})).await;
    assert_eq!(r.status(), 200);
    let r: Value = r.json().await.unwrap();
    assert_eq!(r["rate_limits"], json!({"GetTool": 1}));
    assert_eq!(r["tool_write_limit"], Value::Null);
    let t = ctl.seed_tool(BJ, tool("codex", false)).unwrap();
    c.call("GetTool", json!({"ToolId": t})).await.result();
    let second = c.call("GetTool", json!({"ToolId": t})).await;
    assert_eq!((second.status, second.code()), (429, "Throttling"));
    // The Tool writes are off now: five in a row pass.
    for i in 0..5 {
        c.call("CreateTool", create_tool_body(&format!("w{i}")))
            .await
            .result();
    }

    let r = post(json!({"rate_limits": {"Resume": 5}, "session_ready_delay_ms": 9000})).await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        ctl.settings().0,
        Duration::ZERO,
        "nothing changed by a refused request"
    );
    assert_eq!(ctl.rate_limits().0.get("GetTool"), Some(&1));
}

#[tokio::test]
async fn faults_next_n_rate_latency_and_after_apply() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", false)).unwrap();
    let get = json!({"ToolId": t});

    ctl.inject(Fault::error(Some("GetTool"), "ServiceUnavailable", 503).next(2))
        .unwrap();
    for _ in 0..2 {
        let a = c.call("GetTool", get.clone()).await;
        assert_eq!((a.status, a.code()), (503, "ServiceUnavailable"));
    }
    c.call("GetTool", get.clone()).await.result();
    assert_eq!(ctl.counters().faults_fired, 2);

    ctl.inject(
        Fault::error(Some("ListTools"), "Throttling", 429)
            .rate(0.5)
            .retry_after(2),
    )
    .unwrap();
    let mut hits = 0;
    for _ in 0..40 {
        let a = c.call("ListTools", json!({"ProjectName": "default"})).await;
        if a.status == 429 {
            assert_eq!(a.retry_after.as_deref(), Some("2"));
            hits += 1;
        } else {
            assert_eq!(a.status, 200);
        }
    }
    assert!((5..=35).contains(&hits), "{hits}");
    let counters = ctl.counters();
    assert_eq!(counters.received("ListTools"), 40);
    assert_eq!(counters.succeeded("ListTools"), 40 - hits);
    ctl.clear_faults();
    assert!(ctl.faults().is_empty());

    ctl.inject(Fault::latency(Some("GetTool"), 150).next(1))
        .unwrap();
    let started = std::time::Instant::now();
    c.call("GetTool", get.clone()).await.result();
    assert!(started.elapsed() >= Duration::from_millis(150));

    // A half-succeeded CreateSession: the error is answered, the session exists.
    ctl.inject(
        Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500)
            .next(1)
            .after_apply(),
    )
    .unwrap();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-half", "alice"))
        .await;
    assert_eq!((a.status, a.code()), (500, "ErrCreateSessionFail"));
    let a = c
        .call(
            "ListSessions",
            json!({"ToolId": t, "Filters": [{"Name": "UserSessionId", "Values": ["u-half"]}]}),
        )
        .await;
    assert_eq!(a.result()["SessionInfos"].as_array().unwrap().len(), 1);

    // A plain fault does not apply the action.
    ctl.inject(Fault::error(Some("CreateSession"), "InternalError", 500).next(1))
        .unwrap();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-lost", "alice"))
        .await;
    assert_eq!(a.status, 500);
    assert_eq!(ctl.counters().live_sessions_of("u-lost"), 0);
}

#[tokio::test]
async fn rate_faults_are_repeatable_for_a_seed() {
    async fn pattern(seed: u64) -> Vec<u16> {
        let s = Simulator::start(SimConfig {
            seed,
            ..Default::default()
        })
        .await
        .unwrap();
        let ctl = s.control();
        ctl.inject(Fault::error(None, "ServiceUnavailable", 503).rate(0.3))
            .unwrap();
        let c = Caller::new(&s.endpoint());
        let mut out = Vec::new();
        for _ in 0..20 {
            out.push(
                c.call("ListTools", json!({"ProjectName": "default"}))
                    .await
                    .status,
            );
        }
        out
    }
    assert_eq!(pattern(42).await, pattern(42).await);
}

/// An action answered with an error and carried out later, as AgentKit does with a request
/// whose answer was lost: nothing now, the effect once its time has come.
#[tokio::test]
async fn actions_can_fail_now_and_apply_late() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    ctl.inject(
        Fault::error(Some("CreateSession"), "InternalError", 500)
            .next(1)
            .apply_after(Duration::from_secs(5)),
    )
    .unwrap();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-1", "alice"))
        .await;
    assert_eq!(a.status, 500);
    let list = json!({"ToolId": t, "Filters": [{"Name": "UserSessionId", "Values": ["u-1"]}]});
    let a = c.call("ListSessions", list.clone()).await;
    assert!(
        a.result()["SessionInfos"].as_array().unwrap().is_empty(),
        "not yet"
    );
    assert_eq!(ctl.late_pending(), 1);
    ctl.advance(Duration::from_secs(5));
    let a = c.call("ListSessions", list).await;
    let late = a.result()["SessionInfos"].as_array().unwrap().clone();
    assert_eq!(late.len(), 1, "applied late");
    assert_eq!(ctl.counters().late_applied.get("CreateSession"), Some(&1));
    assert_eq!(ctl.late_pending(), 0);

    // DeleteSession, late too; a Resume of a snapshot deleted meanwhile applies nothing.
    let sid = late[0]["SessionId"].as_str().unwrap().to_string();
    ctl.inject(
        Fault::error(Some("DeleteSession"), "ServiceUnavailable", 503)
            .next(1)
            .apply_after(Duration::from_secs(2)),
    )
    .unwrap();
    let del = json!({"ToolId": t, "SessionId": sid});
    assert_eq!(c.call("DeleteSession", del).await.status, 503);
    assert_eq!(ctl.counters().live_sessions_of("u-1"), 1);
    ctl.advance(Duration::from_secs(2));
    assert_eq!(ctl.counters().live_sessions_of("u-1"), 0);

    let snap = ctl
        .seed_snapshot(SeedSnapshot {
            tool_id: t.clone(),
            user_session_id: Some("u-2".into()),
            ..SeedSnapshot::default()
        })
        .unwrap();
    ctl.inject(
        Fault::error(Some("ResumeSessionFromSnapshot"), "InternalError", 500)
            .next(1)
            .apply_after(Duration::from_secs(2)),
    )
    .unwrap();
    let resume = json!({"ToolId": t, "SnapshotId": snap, "Ttl": 28800, "CreateNewInstance": false});
    assert_eq!(
        c.call("ResumeSessionFromSnapshot", resume).await.status,
        500
    );
    let gone = json!({"ToolId": t, "SnapshotId": snap});
    c.call("DeleteSessionSnapshot", gone).await;
    ctl.advance(Duration::from_secs(2));
    assert_eq!(ctl.counters().live_sessions_of("u-2"), 0);
    assert_eq!(
        ctl.counters().late_applied.get("ResumeSessionFromSnapshot"),
        None
    );

    // An apply_after without an error is refused.
    let mut bad = Fault::latency(Some("CreateSession"), 1);
    bad.apply_after_ms = Some(10);
    assert!(ctl.inject(bad).is_err());
}
