//! API Gateway keeps a named stage in `rawPath` (`/prod/v1/agents`, from an `execute-api` URL)
//! but not a `$default` one, nor a stage a custom domain maps: every route answers under
//! each, and a `Location` header carries the prefix back so it works from where the client
//! stands. Requests are the fixture of a real event, edited.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::store::dynamo::DynamoStore;
use snapwake_tests::*;

type DynamoApi = Api<Arc<DynamoStore>, snapwake::agentkit::AgentKitClient>;

async fn setup(test: &str, ready_delay: Duration) -> (World, DynamoApi) {
    let world = World::start(ready_delay).await;
    let store = Arc::new(dynamo_store(test).await);
    world.register(&store).await;
    let api = Api::new(store, world.client(), identity());
    (world, api)
}

/// `method raw_path` by Alice on `stage` (`None`: the fixture's own, `$default`).
fn staged(method: &str, raw_path: &str, stage: Option<&str>, body: Option<&str>) -> Value {
    let mut event = event(method, raw_path, Who::User("alice"), body);
    if let Some(stage) = stage {
        event["requestContext"]["stage"] = stage.into();
    }
    event
}

async fn status_and_location(api: &DynamoApi, event: &Value) -> (u16, Option<String>) {
    let resp = api.handle(from_event(event)).await;
    let location = header_of(&resp, "location").map(str::to_string);
    (resp.status().as_u16(), location)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_under_a_named_stage() {
    let (world, api) = setup("stages-named", Duration::ZERO).await;
    let (agent, snapshot) = world.asleep_agent("alice", "staged");
    let stage = Some("prod");

    let listed = staged("GET", "/prod/v1/agents", stage, None);
    assert_eq!(status_and_location(&api, &listed).await.0, 200);
    let caps = staged("GET", "/prod/v1/capabilities", stage, None);
    assert_eq!(status_and_location(&api, &caps).await.0, 200);
    let one = staged(
        "GET",
        &format!("/prod/v1/agents/codex/{agent}"),
        stage,
        None,
    );
    assert_eq!(status_and_location(&api, &one).await.0, 200);
    let resume = staged(
        "POST",
        &format!("/prod/v1/agents/codex/{agent}/resume"),
        stage,
        None,
    );
    assert_eq!(status_and_location(&api, &resume).await.0, 200);
    let keepalive = staged(
        "POST",
        &format!("/prod/v1/agents/codex/{agent}/keepalive"),
        stage,
        Some(r#"{"ttl_s": 3600}"#),
    );
    assert_eq!(status_and_location(&api, &keepalive).await.0, 200);
    let delete = staged(
        "DELETE",
        &format!("/prod/v1/agents/codex/{agent}/snapshots/{snapshot}"),
        stage,
        None,
    );
    assert_eq!(status_and_location(&api, &delete).await.0, 204);

    // The stage is a whole segment: `/production` is not `/prod` and routes nowhere.
    let other = staged("GET", "/production/v1/agents", stage, None);
    assert_eq!(status_and_location(&api, &other).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_agent_is_located_under_the_stage_it_was_created_through() {
    let (_world, api) = setup("stages-create", Duration::ZERO).await;
    let body = r#"{"kind": "codex", "display_name": "staged"}"#;
    let created = staged("POST", "/prod/v1/agents", Some("prod"), Some(body));
    let (status, location) = status_and_location(&api, &created).await;
    assert_eq!(status, 201);
    let location = location.expect("a Location");
    assert!(
        location.starts_with("/prod/v1/agents/codex/studio-"),
        "{location}"
    );
    // And that address answers.
    let read = staged("GET", &location, Some("prod"), None);
    assert_eq!(status_and_location(&api, &read).await.0, 200);

    // `$default` (the fixture's stage) adds nothing.
    let plain = staged("POST", "/v1/agents", None, Some(body));
    let (status, location) = status_and_location(&api, &plain).await;
    assert_eq!(status, 201);
    assert!(location
        .expect("a Location")
        .starts_with("/v1/agents/codex/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_still_at_work_points_back_under_the_stage() {
    // Sessions take longer to be Ready than one request waits: the resume answers 202.
    let (world, api) = setup("stages-accepted", Duration::from_secs(30)).await;
    let (agent, _) = world.asleep_agent("alice", "slow");
    let resume = staged(
        "POST",
        &format!("/prod/v1/agents/codex/{agent}/resume"),
        Some("prod"),
        None,
    );
    let (status, location) = status_and_location(&api, &resume).await;
    assert_eq!(status, 202);
    assert_eq!(
        location.as_deref(),
        Some(format!("/prod/v1/agents/codex/{agent}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_a_custom_domain_maps_is_not_in_the_path() {
    let (_world, api) = setup("stages-domain", Duration::ZERO).await;
    let body = r#"{"kind": "codex", "display_name": "domain"}"#;
    let created = staged("POST", "/v1/agents", Some("prod"), Some(body));
    let (status, location) = status_and_location(&api, &created).await;
    assert_eq!(status, 201);
    assert!(location
        .expect("a Location")
        .starts_with("/v1/agents/codex/"));
}
