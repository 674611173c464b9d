//! Capabilities: what `GET /v1/capabilities` offers follows the registry (nothing enabled before
//! a deploy, each kind's retentions from its Tools), and 401 without an identity.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_follow_the_registry() {
    let store = dynamo_store("list-capabilities").await;
    let world = World::start(Duration::ZERO).await;
    let f = list_fn(store.clone(), world.client(), ListSettings::default());
    // Nothing deployed: nothing enabled, temporary by default.
    let (status, body) = get(&f, "/v1/capabilities", &[], Who::User("alice")).await;
    assert_eq!(status, 200, "{body}");
    let codex = &body["kinds"][0];
    assert_eq!(codex["kind"], "codex");
    assert_eq!(codex["default_retention"], "temporary");
    assert_eq!(codex["retention"]["recoverable"]["enabled"], false);
    assert_eq!(
        codex["retention"]["recoverable"]["reason"],
        "no recoverable Tool is deployed"
    );
    assert_eq!(codex["retention"]["temporary"]["enabled"], false);

    // Codex has both Tools, openclaw only a temporary one.
    let mut registry = world.registry();
    registry.kinds.insert(
        Kind::Openclaw,
        snapwake::domain::KindTools {
            temporary: Some("t-claw".into()),
            ..Default::default()
        },
    );
    store.put_registry(&registry, 0).await.unwrap();
    let f = list_fn(store.clone(), world.client(), ListSettings::default());
    let (_, body) = get(&f, "/v1/capabilities", &[], Who::User("alice")).await;
    let kinds = body["kinds"].as_array().unwrap();
    assert_eq!(kinds.len(), 3);
    assert_eq!(kinds[0]["default_retention"], "recoverable");
    assert_eq!(
        kinds[0]["retention"]["recoverable"],
        serde_json::json!({"enabled": true})
    );
    assert_eq!(kinds[1]["kind"], "openclaw");
    assert_eq!(kinds[1]["default_retention"], "temporary");
    assert_eq!(kinds[1]["retention"]["temporary"]["enabled"], true);
    assert_eq!(kinds[1]["retention"]["recoverable"]["enabled"], false);
    assert_eq!(kinds[2]["retention"]["temporary"]["enabled"], false);

    let (status, _) = get(&f, "/v1/capabilities", &[], Who::Nobody).await;
    assert_eq!(status, 401);
}
