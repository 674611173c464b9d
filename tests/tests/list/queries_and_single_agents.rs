//! Bad queries (400), a missing identity (401), filters by state and kind, and single agents:
//! the ETag, another owner's (404), a deleted one (410), one without a record, a legacy one,
//! ownerless and older ids.

use super::seeds::*;
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_missing_identity_and_single_agents() {
    let store = dynamo_store("list-single").await;
    let world = World::start(Duration::from_secs(3600)).await;
    let s = seed(&store, &world).await;
    let f = list_fn(store.clone(), world.client(), ListSettings::default());

    for q in [
        vec![("kind", "Codex")],
        vec![("state", "dozing")],
        vec![("cursor", "x")],
        vec![("limit", "0")],
        vec![("limit", "101")],
        vec![("limit", "ten")],
    ] {
        let (status, body) = get(&f, "/v1/agents", &q, Who::Admin("root")).await;
        assert_eq!(status, 400, "{q:?}: {body}");
        assert_eq!(body["code"], "INVALID_REQUEST");
    }
    let (status, body) = get(&f, "/v1/agents", &[], Who::Nobody).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("UNAUTHENTICATED"))
    );
    let (status, body) = get(&f, "/v1/agents", &[("state", "asleep")], Who::User("alice")).await;
    assert_eq!(status, 200);
    assert_eq!(
        ids(&body),
        [&s.asleep, &s.failed, &s.legacy]
            .into_iter()
            .cloned()
            .collect()
    );
    let (_, body) = get(&f, "/v1/agents", &[("kind", "hermes")], Who::User("alice")).await;
    assert_eq!(body["agents"], serde_json::json!([]));

    let one = |id: &str| format!("/v1/agents/codex/{id}");
    let resp = f
        .handle(request_query(
            "GET",
            &one(&s.failed),
            &[],
            Who::User("alice"),
        ))
        .await;
    let etag = resp
        .headers()
        .get("etag")
        .map(|v| v.to_str().unwrap().to_string());
    let (status, body) = answer(&resp);
    assert_eq!(status, 200, "{body}");
    assert_eq!(etag.as_deref(), Some("\"1\""));
    assert_eq!(body["etag"], "\"1\"");
    assert_eq!(body["wake"]["state"], "failed");
    assert_eq!(get(&f, &one(&s.failed), &[], Who::User("bob")).await.0, 404);
    assert_eq!(get(&f, &one(&s.gone), &[], Who::User("alice")).await.0, 410);
    assert_eq!(get(&f, &one(&s.gone), &[], Who::User("bob")).await.0, 404);
    assert_eq!(
        get(&f, &one(&caller::mint("alice")), &[], Who::User("alice"))
            .await
            .0,
        404
    );
    let resp = f
        .handle(request_query(
            "GET",
            &one(&s.awake_temporary),
            &[],
            Who::User("alice"),
        ))
        .await;
    assert!(resp.headers().get("etag").is_none(), "no record, no ETag");
    let (status, body) = answer(&resp);
    assert_eq!((status, body["state"].as_str()), (200, Some("awake")));
    assert_eq!(body["retention"], "temporary");
    let (status, body) = get(&f, &one(&s.legacy), &[], Who::User("alice")).await;
    assert_eq!(
        (status, body["display_name"].as_str()),
        (200, Some("Alice Old"))
    );
    assert_eq!(
        get(&f, &one(&s.ownerless), &[], Who::User("alice")).await.0,
        404
    );
    assert_eq!(
        get(&f, &one(&s.ownerless), &[], Who::Admin("root")).await.0,
        200
    );
    assert_eq!(
        get(&f, &one(&s.older), &[], Who::Admin("root")).await.0,
        200
    );
    assert_eq!(
        get(&f, &one(&s.older), &[], Who::User("alice")).await.0,
        404
    );
    let (status, _) = get(&f, "/v1/agents/codex/a%2Fb", &[], Who::User("alice")).await;
    assert_eq!(status, 400);
}
