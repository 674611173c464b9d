//! Creating: an agent created on DynamoDB and in memory, shown awake once its session is Ready,
//! its retention from what is deployed (503 for one that is not, no agents for legacy tools), and
//! invalid requests answered as problems that create nothing.

use super::*;

// ---------------------------------------------------------------------------------------------
// Creating

async fn creates_an_agent<S: AgentStore + snapwake::store::ScheduleStore>(store: S) {
    let world = World::registered(Duration::from_secs(30), &store).await;
    let store = Arc::new(store);
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let owner = "alice@example.com";

    let resp = function
        .handle(create_request(
            Who::User(owner),
            r#"{"kind":"codex","display_name":"  Data helper "}"#,
            None,
        ))
        .await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 201, "{view}");
    let id = agent_id(&view);
    assert!(
        id.starts_with("studio-u_MFWGSY3FIBSXQYLNOBWGKLTDN5WQ-"),
        "{id}"
    );
    assert_eq!(id.len(), caller::prefix(owner).len() + 32);
    assert_eq!(
        header_of(&resp, "location"),
        Some(format!("/v1/agents/codex/{id}").as_str())
    );
    // Three writes: the record taken as `creating`, the attempt marked before CreateSession
    // (`create_sent_at`), then the session recorded.
    assert_eq!(header_of(&resp, "etag"), Some("\"3\""));
    assert_eq!(header_of(&resp, "content-type"), Some("application/json"));
    assert_eq!(view["kind"], "codex");
    assert_eq!(view["display_name"], "Data helper");
    assert_eq!(view["owner"], owner);
    assert_eq!(view["created_by"], owner);
    assert_eq!(view["retention"], "recoverable");
    assert_eq!(view["state"], "starting");
    assert_eq!(view["etag"], "\"3\"");
    assert!(view["wake"].is_null());
    assert_eq!(view["snapshots"], serde_json::json!([]));
    let session_id = view["session"]["session_id"].as_str().unwrap().to_string();
    assert!(!session_id.is_empty());
    assert!(!view.to_string().contains("Endpoint") && !view.to_string().contains("http"));

    // The record.
    let record = store
        .get(&AgentKey::new(Kind::Codex, &id))
        .await
        .unwrap()
        .expect("the agent record");
    assert_eq!(record.description.owner.as_deref(), Some(owner));
    assert_eq!(
        record.description.owner_key.as_deref(),
        Some("studio-u_MFWGSY3FIBSXQYLNOBWGKLTDN5WQ")
    );
    assert_eq!(
        record.description.display_name.as_deref(),
        Some("Data helper")
    );
    assert_eq!(record.description.created_by.as_deref(), Some(owner));
    assert_eq!(record.description.retention, Some(Retention::Recoverable));
    assert_eq!(
        record.description.tool_id.as_deref(),
        Some(world.recoverable.as_str())
    );
    assert_eq!(record.description.region.as_deref(), Some(REGION));
    // Awake with its session recorded, the lock given back; not yet verified (Creating).
    assert_eq!(record.state, WakeState::Awake);
    assert_eq!(record.session_id.as_deref(), Some(session_id.as_str()));
    assert!(record.holder.is_none() && record.session_expire_at.is_some());
    assert_eq!(record.verified_at_ms, 0);
    assert!(record.description.created_at.is_some());
    let page = store
        .query_owner(&caller::owner_keys(owner)[0], 10, None)
        .await
        .unwrap();
    assert_eq!(page.records.len(), 1, "the owner index lists the new agent");

    // The session, on the recoverable Tool, with the Studio's metadata.
    let sessions = world.sim.control().sessions();
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    assert_eq!(s.session_id.as_deref(), Some(session_id.as_str()));
    assert_eq!(s.user_session_id.as_deref(), Some(id.as_str()));
    assert_eq!(metadata_value(&s.metadata, "Username"), Some(owner));
    assert_eq!(
        metadata_value(&s.metadata, "veadk_display_name"),
        Some("Data helper")
    );
    assert_eq!(
        metadata_value(&s.metadata, "veadk_creator_name"),
        Some(owner)
    );
    assert_eq!(sessions_on(&world, &world.recoverable, &id).await, 1);
    assert_eq!(creates(&world), 1);
}

#[tokio::test]
async fn creates_an_agent_on_dynamodb() {
    creates_an_agent(dynamo_store("create-basic").await).await;
}

#[tokio::test]
async fn creates_an_agent_in_memory() {
    creates_an_agent(MemoryStore::new()).await;
}

#[tokio::test]
async fn a_ready_session_shows_the_agent_awake() {
    let store = MemoryStore::new();
    let world = World::registered(Duration::ZERO, &store).await;
    let function = create_fn(store, world.client(), CreateSettings::default());
    let resp = function.handle(alices_create("Quick", None)).await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 201, "{view}");
    assert_eq!(view["state"], "awake");
    assert_eq!(view["session"]["status"], "Ready");
    assert!(agent_id(&view).starts_with("studio-alice-"));
}

#[tokio::test]
async fn retention_defaults_to_recoverable_when_deployed_else_temporary() {
    let store = Arc::new(dynamo_store("create-retention").await);
    let world = World::start(Duration::from_secs(30)).await;
    let more = world.seed_more_kinds();
    world.register_with(&store, &more).await;
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());

    let cases = [
        ("codex", None, "recoverable", world.recoverable.clone()),
        (
            "codex",
            Some("temporary"),
            "temporary",
            world.temporary.clone(),
        ),
        (
            "codex",
            Some("recoverable"),
            "recoverable",
            world.recoverable.clone(),
        ),
        ("hermes", None, "temporary", more.hermes_temporary.clone()),
        (
            "openclaw",
            None,
            "temporary",
            more.openclaw_temporary.clone(),
        ),
    ];
    for (kind, retention, expected, tool) in cases.clone() {
        let resp = function
            .handle(create_request(
                Who::User("alice"),
                &body(kind, "Helper", retention),
                None,
            ))
            .await;
        let (status, view) = answer(&resp);
        assert_eq!(status, 201, "{kind} {retention:?}: {view}");
        assert_eq!(view["retention"], expected, "{kind} {retention:?}");
        let id = agent_id(&view);
        let record = store
            .get(&AgentKey::new(kind.parse().unwrap(), &id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            record.description.tool_id.as_deref(),
            Some(tool.as_str()),
            "{kind}"
        );
        assert_eq!(sessions_on(&world, &tool, &id).await, 1, "{kind}");
    }
    assert_eq!(creates(&world), cases.len() as u64);
}

#[tokio::test]
async fn an_undeployed_retention_is_503_and_legacy_tools_never_get_agents() {
    let store = Arc::new(MemoryStore::new());
    let world = World::start(Duration::from_secs(30)).await;
    let more = world.seed_more_kinds();
    world.register_with(&store, &more).await;
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());

    for kind in ["hermes", "openclaw"] {
        let resp = function
            .handle(create_request(
                Who::User("alice"),
                &body(kind, "Helper", Some("recoverable")),
                None,
            ))
            .await;
        assert_problem(&resp, 503, "NOT_CONFIGURED");
    }
    assert_eq!(creates(&world), 0, "nothing is created on a legacy Tool");

    // openclaw's default is temporary, never its legacy snapshot Tool.
    let resp = function
        .handle(create_request(
            Who::User("alice"),
            &body("openclaw", "Claw", None),
            None,
        ))
        .await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 201, "{view}");
    let id = agent_id(&view);
    assert_eq!(sessions_on(&world, &more.openclaw_legacy, &id).await, 0);
    assert_eq!(sessions_on(&world, &more.openclaw_temporary, &id).await, 1);

    // No registry entry at all for a kind: 503 as well.
    let empty = create_fn(
        MemoryStore::new(),
        world.client(),
        CreateSettings::default(),
    );
    let resp = empty.handle(alices_create("Helper", None)).await;
    assert_problem(&resp, 503, "NOT_CONFIGURED");
}

#[tokio::test]
async fn invalid_requests_are_problems_and_create_nothing() {
    let store = Arc::new(MemoryStore::new());
    let world = World::registered(Duration::from_secs(30), &store).await;
    let function = create_fn(store.clone(), world.client(), CreateSettings::default());
    let alice = Who::User("alice");
    let long_name = "x".repeat(41);
    let long_key = "k".repeat(201);
    let huge = format!(
        r#"{{"kind":"codex","display_name":"a","pad":"{}"}}"#,
        "x".repeat(17 * 1024)
    );

    let cases: Vec<(String, Who<'_>, Option<&str>, u16, &str)> = vec![
        ("{not json".into(), alice, None, 400, "INVALID_REQUEST"),
        ("".into(), alice, None, 400, "INVALID_REQUEST"),
        (
            r#"{"kind":1,"display_name":"a"}"#.into(),
            alice,
            None,
            400,
            "INVALID_REQUEST",
        ),
        (
            r#"{"kind":"codex","display_name":7}"#.into(),
            alice,
            None,
            400,
            "INVALID_REQUEST",
        ),
        (
            r#"{"kind":"codex","display_name":"a","retention":true}"#.into(),
            alice,
            None,
            400,
            "INVALID_REQUEST",
        ),
        (r#"["codex"]"#.into(), alice, None, 400, "INVALID_REQUEST"),
        (
            r#"{"kind":"codex"}"#.into(),
            alice,
            None,
            400,
            "INVALID_REQUEST",
        ),
        (
            body("Codex", "a", None),
            alice,
            None,
            400,
            "INVALID_REQUEST",
        ),
        (
            body("gemini", "a", None),
            alice,
            None,
            400,
            "INVALID_REQUEST",
        ),
        (
            body("codex", "a", Some("forever")),
            alice,
            None,
            400,
            "INVALID_REQUEST",
        ),
        (
            r#"{"kind":"codex","display_name":"a","retension":"temporary"}"#.into(),
            alice,
            None,
            400,
            "INVALID_REQUEST",
        ),
        (body("codex", "", None), alice, None, 422, "INVALID_REQUEST"),
        (
            body("codex", "   ", None),
            alice,
            None,
            422,
            "INVALID_REQUEST",
        ),
        (
            body("codex", &long_name, None),
            alice,
            None,
            422,
            "INVALID_REQUEST",
        ),
        (
            body("codex", "bad\u{7}name", None),
            alice,
            None,
            422,
            "INVALID_REQUEST",
        ),
        (
            body("codex", "two\nlines", None),
            alice,
            None,
            422,
            "INVALID_REQUEST",
        ),
        (huge, alice, None, 413, "PAYLOAD_TOO_LARGE"),
        (
            body("codex", "a", None),
            Who::Nobody,
            None,
            401,
            "UNAUTHENTICATED",
        ),
        (
            body("codex", "a", None),
            alice,
            Some("has space"),
            400,
            "INVALID_REQUEST",
        ),
        (
            body("codex", "a", None),
            alice,
            Some(long_key.as_str()),
            400,
            "INVALID_REQUEST",
        ),
        (
            body("codex", "a", None),
            alice,
            Some("ключ"),
            400,
            "INVALID_REQUEST",
        ),
    ];
    for (text, who, key, status, code) in &cases {
        let req = match key {
            Some(k) if !k.is_ascii() => {
                let mut r = create_request(*who, text, None);
                r.headers_mut().insert(
                    "idempotency-key",
                    lambda_http::http::HeaderValue::from_bytes(k.as_bytes()).unwrap(),
                );
                r
            }
            _ => create_request(*who, text, *key),
        };
        let resp = function.handle(req).await;
        let (_, problem) = answer(&resp);
        assert_problem(&resp, *status, code);
        assert_eq!(problem["retryable"], false, "{text:.80}");
        assert!(problem["request_id"].as_str().is_some());
        assert!(problem["type"]
            .as_str()
            .unwrap()
            .starts_with("urn:snapwake:problem:"));
    }
    // A 40-character name (in characters, not bytes) is fine.
    let resp = function
        .handle(create_request(
            alice,
            &body("codex", &"助".repeat(40), None),
            None,
        ))
        .await;
    assert_eq!(answer(&resp).0, 201);

    let wrong_method = function
        .handle(request("GET", "/v1/agents/codex/x", alice, None))
        .await;
    assert_eq!(answer(&wrong_method).0, 404);
    let mut get = request("GET", "/v1/agents", alice, None);
    get.headers_mut().remove("idempotency-key");
    let resp = function.handle(get).await;
    assert_problem(&resp, 405, "METHOD_NOT_ALLOWED");
    assert_eq!(header_of(&resp, "allow"), Some("POST"));

    assert_eq!(
        creates(&world),
        1,
        "only the valid request created a session"
    );
}
