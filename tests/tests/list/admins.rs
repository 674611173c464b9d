//! Admins: one owner's list as the owner sees it, everyone paged exactly once after a sweep
//! (ownerless agents included) and a page before it saying the index is not complete yet,
//! non-admins naming anyone else refused, cursors tamper-evident and bound to their query.

use super::seeds::*;
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_list_one_owner_or_page_everyone_exactly_once() {
    let store = dynamo_store("list-admin").await;
    let world = World::start(Duration::from_secs(3600)).await;
    let s = seed(&store, &world).await;
    let f = list_fn(store.clone(), world.client(), ListSettings::default());

    let (status, own) = get(&f, "/v1/agents", &[], Who::User("alice")).await;
    assert_eq!(status, 200);
    let (status, by_admin) = get(&f, "/v1/agents", &[("owner", "alice")], Who::Admin("root")).await;
    assert_eq!(status, 200, "{by_admin}");
    assert_eq!(summary(&by_admin), summary(&own));
    // Naming oneself is fine; naming anyone else (or everyone) is not, for a non-admin.
    let (status, _) = get(&f, "/v1/agents", &[("owner", "alice")], Who::User("alice")).await;
    assert_eq!(status, 200);
    for other in ["bob", "*"] {
        let (status, body) = get(&f, "/v1/agents", &[("owner", other)], Who::User("alice")).await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["code"], "AGENT_NOT_FOUND");
    }

    // Before any sweep the index does not cover agents made outside snapwake: an admin's page
    // says so.
    let (status, unsynced) = get(&f, "/v1/agents", &[("owner", "*")], Who::Admin("root")).await;
    assert_eq!(status, 200, "{unsynced}");
    assert!(
        unsynced["partial"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not indexed yet")),
        "{unsynced}"
    );
    assert!(sync(&store, &world, &world.registry()).await.completed);

    // Everyone, two at a time: every visible agent exactly once, ownerless ones included.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut q = vec![("owner", "*"), ("limit", "2")];
        if let Some(c) = cursor.as_deref() {
            q.push(("cursor", c));
        }
        let (status, page) = get(&f, "/v1/agents", &q, Who::Admin("root")).await;
        assert_eq!(status, 200, "{page}");
        assert!(page["agents"].as_array().unwrap().len() <= 2);
        assert_eq!(page["partial"], serde_json::json!([]));
        seen.extend(ids(&page));
        pages += 1;
        assert!(pages < 50, "paging does not end");
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        seen.len(),
        "an agent appeared twice: {seen:?}"
    );
    let mut everyone = alices(&s);
    everyone.extend([
        s.bob_asleep.clone(),
        s.bob_awake.clone(),
        s.mislabelled.clone(),
        s.ownerless.clone(),
        s.older.clone(),
    ]);
    assert_eq!(unique, everyone);
    assert!(pages > 4, "limit 2 must page: {pages}");

    // Cursors are tamper-evident and bound to their query.
    let (_, first) = get(
        &f,
        "/v1/agents",
        &[("owner", "*"), ("limit", "1")],
        Who::Admin("root"),
    )
    .await;
    let c = first["next_cursor"].as_str().unwrap().to_string();
    let (payload, tag) = c.split_once('.').unwrap();
    let mut json: Value =
        serde_json::from_slice(&BASE64URL_NOPAD.decode(payload.as_bytes()).unwrap()).unwrap();
    json["t"] = world.temporary.clone().into();
    let forged = format!(
        "{}.{tag}",
        BASE64URL_NOPAD.encode(&serde_json::to_vec(&json).unwrap())
    );
    for bad in [forged.as_str(), "garbage", &c[..c.len() - 2]] {
        let (status, body) = get(
            &f,
            "/v1/agents",
            &[("owner", "*"), ("cursor", bad)],
            Who::Admin("root"),
        )
        .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["code"], "INVALID_REQUEST");
    }
    let (status, _) = get(
        &f,
        "/v1/agents",
        &[("owner", "*"), ("cursor", &c), ("kind", "codex")],
        Who::Admin("root"),
    )
    .await;
    assert_eq!(status, 400, "a cursor of another query");
    let (status, _) = get(
        &f,
        "/v1/agents",
        &[("owner", "*"), ("cursor", &c)],
        Who::Admin("root"),
    )
    .await;
    assert_eq!(status, 200);
}
