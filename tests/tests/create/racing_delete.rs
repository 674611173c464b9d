//! A create and a delete of the same agent: an agent delete racing a create waits for it, and a
//! takeover that finds the agent deleted is 410 and creates nothing.

use super::*;

/// The one agent record of alice's (the create under test minted its id).
async fn alices_agent<S: AgentStore + snapwake::store::ScheduleStore>(
    store: &S,
) -> snapwake::domain::AgentRecord {
    let page = store
        .query_owner(&caller::owner_keys("alice")[0], 10, None)
        .await
        .unwrap();
    assert_eq!(page.records.len(), 1, "{:?}", page.records);
    page.records.into_iter().next().unwrap()
}

/// A create holds its agent (state `creating`) around CreateSession, so an agent delete
/// racing it is fenced like one racing a wake: caught after AgentKit created the session, the
/// create makes the delete wait (409, nothing deleted); once the create answered 201, the
/// delete ends its session and a late resume is 410.
#[tokio::test]
async fn an_agent_delete_racing_a_create_waits_for_it() {
    let (store, world, _) = deployed_shared("create-vs-delete", Duration::ZERO).await;
    let gate = Arc::new(Gate::after(world.client(), "CreateSession"));
    let function = Arc::new(create_fn(
        store.clone(),
        gate.clone(),
        CreateSettings::default(),
    ));
    let c = spawn_request(&function, alices_create("Racy", Some("key-race")));
    gate.reached().await;
    let record = alices_agent(&store).await;
    assert_eq!(record.state, WakeState::Creating);
    let agent_id = record.key.agent_id.clone();
    let path = format!("/v1/agents/codex/{agent_id}");

    let delete = delete_fn(
        store.clone(),
        world.client(),
        delete_settings(&quick_wake()),
    );
    let (status, problem) = answer(&delete.handle(alices_request("DELETE", &path)).await);
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{problem}"
    );
    assert_eq!(world.live_sessions_of(&agent_id), 1);
    gate.release.notify_one();
    let created = c.await.unwrap();
    assert_eq!(answer(&created).0, 201);

    let (status, _) = answer(&delete.handle(alices_request("DELETE", &path)).await);
    assert_eq!(status, 204);
    assert_eq!(world.live_sessions_of(&agent_id), 0);
    let api = Api::new(store.clone(), world.client(), identity());
    let (status, _) = answer(
        &api.resume
            .handle(alices_request("POST", &format!("{path}/resume")))
            .await,
    );
    assert_eq!(status, 410);
    // The key replays the create's own answer; nothing is created again.
    let replay = function
        .handle(alices_create("Racy", Some("key-race")))
        .await;
    assert_eq!(replay.body(), created.body());
    assert_eq!(creates(&world), 1);
}

/// An attempt died right after AgentKit created its session; the agent was then deleted. A
/// retry with the same Idempotency-Key takes the attempt over, finds the agent deleted, and
/// answers 410 AGENT_GONE: it creates nothing (no session nobody could see or delete).
#[tokio::test]
async fn a_takeover_that_finds_the_agent_deleted_is_410_and_creates_nothing() {
    let (store, world, _) = deployed_shared("create-gone", Duration::ZERO).await;
    // The invocation dies right after AgentKit created the session: a gate never released.
    let agentkit = Arc::new(Gate::after(world.client(), "CreateSession"));
    let mut function = create_fn(store.clone(), agentkit.clone(), CreateSettings::default());
    function.settings.stale_running = Duration::from_millis(800);
    function.settings.lock = quick_lock(Duration::from_millis(300));
    let function = Arc::new(function);
    let req = || alices_create("Lazarus", Some("key-gone"));
    let first = spawn_request(&function, req());
    agentkit.reached.notified().await;
    first.abort();
    let _ = first.await;
    let agent_id = alices_agent(&store).await.key.agent_id;
    assert_eq!(world.live_sessions_of(&agent_id), 1);

    // Once the dead attempt's lease has passed, the agent is deleted (its session too).
    tokio::time::sleep(Duration::from_millis(600)).await;
    let delete = delete_fn(
        store.clone(),
        world.client(),
        delete_settings(&quick_wake()),
    );
    let (status, body) = answer(
        &delete
            .handle(alices_request(
                "DELETE",
                &format!("/v1/agents/codex/{agent_id}"),
            ))
            .await,
    );
    assert_eq!(status, 204, "{body}");
    assert_eq!(world.live_sessions_of(&agent_id), 0);

    tokio::time::sleep(Duration::from_millis(400)).await;
    let retry = function.handle(req()).await;
    assert_problem(&retry, 410, "AGENT_GONE");
    assert_eq!(creates(&world), 1, "nothing created again");
    assert_eq!(world.live_sessions_of(&agent_id), 0);
    // The answer is final for the key: a further retry says the same.
    assert_problem(&function.handle(req()).await, 410, "AGENT_GONE");
}
