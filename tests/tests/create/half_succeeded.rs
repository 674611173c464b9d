//! Half-succeeded and failed CreateSession: a failure with the session created reconciled to
//! 201, one with nothing shown 202 until its window ends, a CreateSession applied late adopted
//! and never sent twice, and a throttled create answered 429 with `Retry-After`.

use super::*;

// ---------------------------------------------------------------------------------------------
// Half-succeeded and failed CreateSession

#[tokio::test]
async fn create_session_fail_with_the_session_created_is_reconciled_to_201() {
    let (store, world, _) = deployed_shared("create-half", Duration::from_secs(30)).await;
    world.inject(
        Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500)
            .after_apply()
            .next(1),
    );
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let resp = function.handle(alices_create("Half", None)).await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 201, "{view}");
    let id = agent_id(&view);
    assert_eq!(view["state"], "starting");
    assert_eq!(creates(&world), 1, "reconciled, not created twice");
    assert_eq!(world.live_sessions_of(&id), 1);
    assert!(store
        .get(&AgentKey::new(Kind::Codex, &id))
        .await
        .unwrap()
        .is_some());
}

/// `ErrCreateSessionFail` and no session shows: AgentKit may still create it, so the answer is
/// 202 (`Retry-After`, `Location`), the agent stays held as `creating` with the attempt in its
/// record, and nothing is sent again. Once the window is over with no session, the record
/// reads as absent: no ghost agent.
#[tokio::test]
async fn create_session_fail_with_nothing_shown_is_202_until_its_window_ends() {
    let (store, world, _) = deployed_shared("create-fail", Duration::from_secs(30)).await;
    world.inject(Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500).next(1));
    let mut function = create_fn(store.clone(), world.client(), CreateSettings::default());
    function.settings.unsettled_window = Duration::from_millis(1500);
    let resp = function.handle(alices_create("Nothing", None)).await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 202, "{view}");
    assert_eq!(view["state"], "starting", "{view}");
    assert!(view["session"].is_null(), "{view}");
    assert_eq!(header_of(&resp, "retry-after"), Some("2"));
    let id = agent_id(&view);
    assert_eq!(
        header_of(&resp, "location"),
        Some(format!("/v1/agents/codex/{id}").as_str())
    );
    assert_eq!(creates(&world), 1, "never retried blindly");
    let record = store
        .get(&AgentKey::new(Kind::Codex, &id))
        .await
        .unwrap()
        .expect("the record holds the attempt");
    assert_eq!(record.state, WakeState::Creating);
    assert!(record.create_sent_at_ms.is_some(), "{record:?}");
    assert!(world.sim.control().sessions().is_empty());

    // (Whole seconds: the record expires in the second after the window.)
    tokio::time::sleep(Duration::from_millis(4000)).await;
    // The record of the agent that never started reads as absent once its window is over.
    let page = store
        .query_owner(&caller::owner_keys("alice")[0], 10, None)
        .await
        .unwrap();
    assert!(
        page.records.is_empty(),
        "no ghost agent: {:?}",
        page.records
    );
    assert_eq!(creates(&world), 1);
}

/// CreateSession answers 500 but AgentKit creates the session seconds later. The answer is 202;
/// retries with the same Idempotency-Key inside the window list the agent's sessions and, while
/// none shows, answer 202 again without a second CreateSession; once the late session shows,
/// the next retry adopts it (201), and later ones replay that.
#[tokio::test]
async fn a_create_session_applied_late_is_adopted_never_sent_twice() {
    let (store, world, ctl) = deployed_shared("create-late", Duration::from_secs(30)).await;
    ctl.inject(Fault::error(Some("CreateSession"), "InternalError", 500).next(1))
        .unwrap();
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let req = || alices_create("Late", Some("key-late"));
    let first = function.handle(req()).await;
    let (status, view) = answer(&first);
    assert_eq!(status, 202, "{view}");
    let id = agent_id(&view);
    assert_eq!(creates(&world), 1);

    // AgentKit has not shown the session yet: no proof that nothing was created.
    let early = function.handle(req()).await;
    let (status, early_view) = answer(&early);
    assert_eq!(status, 202, "{early_view}");
    assert_eq!(agent_id(&early_view), id);
    assert_eq!(
        creates(&world),
        1,
        "no second CreateSession inside the window"
    );

    // The lost CreateSession takes effect.
    let late = ctl
        .seed_session(snapwake_sim::SeedSession {
            tool_id: world.recoverable.clone(),
            user_session_id: Some(id.clone()),
            status: Some("Creating".into()),
            metadata: vec![snapwake::agentkit::types::MetadataEntry::string(
                "Username", "alice",
            )],
            ..Default::default()
        })
        .unwrap();

    let retry = function.handle(req()).await;
    let (status, adopted) = answer(&retry);
    assert_eq!(status, 201, "{adopted}");
    assert_eq!(agent_id(&adopted), id);
    assert_eq!(adopted["session"]["session_id"], late.as_str(), "{adopted}");
    assert_eq!(creates(&world), 1, "the late session is adopted");
    assert_eq!(ctl.counters().live_sessions_of(&id), 1);
    let record = store
        .get(&AgentKey::new(Kind::Codex, &id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, WakeState::Awake);
    assert_eq!(record.session_id.as_deref(), Some(late.as_str()));
    assert_eq!(record.create_sent_at_ms, None);
    assert_eq!(record.expires_at, None);
    let again = function.handle(req()).await;
    assert_eq!(again.body(), retry.body());
    assert_eq!(creates(&world), 1);
}

/// The same against the simulator's own late action (`Fault::apply_after`): CreateSession
/// answers 500 and AgentKit starts the session 2 s later. Retries inside the window send
/// nothing and adopt the session once it shows.
#[tokio::test]
async fn a_create_session_the_simulator_applies_late_is_adopted_never_sent_twice() {
    let (store, world, ctl) = deployed_shared("create-late-sim", Duration::ZERO).await;
    ctl.inject(
        Fault::error(Some("CreateSession"), "InternalError", 500)
            .next(1)
            .apply_after(Duration::from_secs(2)),
    )
    .unwrap();
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let req = || alices_create("Late", Some("key-late-sim"));
    let (status, view) = answer(&function.handle(req()).await);
    assert_eq!(status, 202, "{view}");
    let id = agent_id(&view);
    let until = std::time::Instant::now() + Duration::from_secs(15);
    let adopted = loop {
        let (status, v) = answer(&function.handle(req()).await);
        if status == 201 {
            break v;
        }
        assert_eq!(status, 202, "{v}");
        assert!(std::time::Instant::now() < until, "never adopted: {v}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(agent_id(&adopted), id);
    assert_eq!(
        creates(&world),
        1,
        "no second CreateSession inside the window"
    );
    assert_eq!(ctl.counters().late_applied.get("CreateSession"), Some(&1));
    assert_eq!(ctl.counters().live_sessions_of(&id), 1);
}

#[tokio::test]
async fn a_throttled_create_is_429_with_retry_after() {
    let store = Arc::new(MemoryStore::new());
    let world = World::registered(Duration::from_secs(30), &store).await;
    world.inject(Fault::error(Some("CreateSession"), "Throttling", 429).retry_after(1));
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let resp = function.handle(alices_create("Slow down", None)).await;
    assert_problem(&resp, 429, "PROVIDER_THROTTLED");
    assert_eq!(answer(&resp).1["retryable"], true);
    assert!(header_of(&resp, "retry-after").is_some());
    assert!(world.sim.control().sessions().is_empty());
}
