//! A custom domain's base path (`SNAPWAKE_BASE_PATH`): API Gateway keeps it in `rawPath`, so
//! routing strips it, with or without a named stage before it, and `Location` carries it back.
//! Its own test binary: the base path is read once per process.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::store::dynamo::DynamoStore;
use snapwake_tests::*;

type DynamoApi = Api<Arc<DynamoStore>, snapwake::agentkit::AgentKitClient>;

async fn setup(test: &str) -> (World, DynamoApi) {
    // Every test of this binary sets the same value before the first request reads it.
    std::env::set_var(snapwake::http::edge::BASE_PATH_VAR, "api/");
    let world = World::start(Duration::ZERO).await;
    let store = Arc::new(dynamo_store(test).await);
    world.register(&store).await;
    let api = Api::new(store, world.client(), identity());
    (world, api)
}

fn alice(method: &str, raw_path: &str, stage: Option<&str>, body: Option<&str>) -> Value {
    let mut event = event(method, raw_path, Who::User("alice"), body);
    if let Some(stage) = stage {
        event["requestContext"]["stage"] = stage.into();
    }
    event
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_answer_under_the_base_path_and_locations_keep_it() {
    let (world, api) = setup("base-path").await;
    let (agent, _) = world.asleep_agent("alice", "based");

    let listed = api
        .handle(from_event(&alice("GET", "/api/v1/agents", None, None)))
        .await;
    assert_eq!(listed.status(), 200);
    let resume = api
        .handle(from_event(&alice(
            "POST",
            &format!("/api/v1/agents/codex/{agent}/resume"),
            None,
            None,
        )))
        .await;
    assert_eq!(resume.status(), 200);

    let body = r#"{"kind": "codex", "display_name": "based"}"#;
    let created = api
        .handle(from_event(&alice(
            "POST",
            "/api/v1/agents",
            None,
            Some(body),
        )))
        .await;
    assert_eq!(created.status(), 201);
    let location = header_of(&created, "location").expect("a Location");
    assert!(location.starts_with("/api/v1/agents/codex/"), "{location}");

    // A named stage comes first in an execute-api URL, then the base path.
    let staged = api
        .handle(from_event(&alice(
            "POST",
            "/prod/api/v1/agents",
            Some("prod"),
            Some(body),
        )))
        .await;
    assert_eq!(staged.status(), 201);
    let location = header_of(&staged, "location").expect("a Location");
    assert!(
        location.starts_with("/prod/api/v1/agents/codex/"),
        "{location}"
    );

    // A segment that only begins like the base path is not it.
    let other = api
        .handle(from_event(&alice("GET", "/apis/v1/agents", None, None)))
        .await;
    assert_eq!(other.status(), 404);
}
