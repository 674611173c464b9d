//! Creates that recover what an earlier attempt or AgentKit left: a dead attempt taken over
//! without a second session, a Tool found in another region with its region recorded, and an
//! ambiguous 5xx after the session was created reconciled.

use super::*;

#[tokio::test]
async fn a_dead_attempt_is_taken_over_without_a_second_session() {
    let (store, world, _) = deployed_shared("create-takeover", Duration::from_secs(30)).await;
    // The invocation dies right after AgentKit created the session: a gate never released.
    let agentkit = Arc::new(Gate::after(world.client(), "CreateSession"));
    let mut function = create_fn(store.clone(), agentkit.clone(), CreateSettings::default());
    function.settings.stale_running = Duration::from_millis(800);
    function.settings.lock = quick_lock(Duration::from_millis(400));
    let function = Arc::new(function);
    let req = || alices_create("Phoenix", Some("key-dead"));
    let first = spawn_request(&function, req());
    agentkit.reached.notified().await;
    first.abort();
    assert_eq!(creates(&world), 1);

    // While the dead attempt's document is fresh, a retry is told to wait.
    let early = function.handle(req()).await;
    assert_problem(&early, 409, "AGENT_BUSY");

    tokio::time::sleep(Duration::from_millis(900)).await;
    let retry = function.handle(req()).await;
    let (status, view) = answer(&retry);
    assert_eq!(status, 201, "{view}");
    assert_eq!(
        creates(&world),
        1,
        "the session of the dead attempt is adopted"
    );
    let id = agent_id(&view);
    assert_eq!(world.live_sessions_of(&id), 1);
    assert_eq!(view["display_name"], "Phoenix");
    let again = function.handle(req()).await;
    assert_eq!(again.body(), retry.body());
}

#[tokio::test]
async fn a_tool_in_another_region_is_found_and_its_region_recorded() {
    let store = Arc::new(dynamo_store("create-region").await);
    let world = World::start(Duration::from_secs(30)).await;
    let shanghai = world
        .sim
        .control()
        .seed_tool(
            "cn-shanghai",
            snapwake_sim::SeedTool::code_env("chat-snapshot-sh", true),
        )
        .unwrap();
    // The registry says cn-beijing, but the recoverable Tool lives in cn-shanghai.
    let mut registry = world.registry();
    registry.kinds.get_mut(&Kind::Codex).unwrap().recoverable = Some(shanghai.clone());
    store.put_registry(&registry, 0).await.unwrap();
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let resp = function.handle(alices_create("Far away", None)).await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 201, "{view}");
    let record = store
        .get(&AgentKey::new(Kind::Codex, agent_id(&view)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.description.region.as_deref(), Some("cn-shanghai"));
    assert_eq!(
        record.description.tool_id.as_deref(),
        Some(shanghai.as_str())
    );
    assert_eq!(
        header_of(&resp, "etag"),
        Some(record.etag().as_str()),
        "the answer carries the version that recorded the region"
    );
    assert_eq!(view["etag"], record.etag());
    assert_eq!(creates(&world), 2, "one NotFound in cn-beijing, one create");
    assert_eq!(world.sim.control().sessions().len(), 1);
}

#[tokio::test]
async fn an_ambiguous_5xx_after_the_session_was_created_is_reconciled() {
    let store = Arc::new(MemoryStore::new());
    let world = World::registered(Duration::from_secs(30), &store).await;
    world.inject(
        Fault::error(Some("CreateSession"), "InternalError", 500)
            .after_apply()
            .next(1),
    );
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let resp = function.handle(alices_create("Lost answer", None)).await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 201, "{view}");
    assert_eq!(creates(&world), 1);
    assert_eq!(world.live_sessions_of(&agent_id(&view)), 1);
}
