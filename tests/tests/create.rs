//! The create function end to end: API Gateway v2 requests into the handler, agent records and
//! idempotency documents on DynamoDB Local (and the in-memory store where it is cheap),
//! AgentKit simulated over HTTP.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::types::{metadata_value, Action, Filter, ListSessions};
use snapwake::agentkit::{list_all, AgentKit, AgentKitClient, AgentKitError};
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, Kind, Retention, WakeState};
use snapwake::identity::usid;
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::memory::MemoryStore;
use snapwake::store::{AgentStore, DocumentKey};
use snapwake_create::{Create, CreateSettings};
use snapwake_sim::Fault;
use snapwake_tests::lost_answers::LostAnswers;
use snapwake_tests::*;
use tokio::sync::Notify;

fn create_fn<S: AgentStore, K: AgentKit>(store: S, agentkit: K) -> Create<S, K> {
    Create {
        store,
        agentkit,
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        settings: CreateSettings::default(),
    }
}

fn body(kind: &str, name: &str, retention: Option<&str>) -> String {
    let mut v = serde_json::json!({"kind": kind, "display_name": name});
    if let Some(r) = retention {
        v["retention"] = r.into();
    }
    v.to_string()
}

fn agent_id(body: &Value) -> String {
    body["agent_id"].as_str().unwrap_or_default().to_string()
}

fn creates(world: &World) -> u64 {
    world.sim.control().counters().received("CreateSession")
}

/// Sessions with `user_session_id` on `tool` (any status), as AgentKit lists them.
async fn sessions_on(world: &World, tool: &str, user_session_id: &str) -> usize {
    let req = ListSessions {
        tool_id: tool.into(),
        filters: Some(vec![Filter::one("UserSessionId", user_session_id)]),
        ..ListSessions::default()
    };
    let deadline = Deadline::after(Duration::from_secs(10));
    list_all(&world.client(), REGION, req, 10, deadline)
        .await
        .unwrap()
        .len()
}

fn assert_problem(resp: &lambda_http::Response<lambda_http::Body>, status: u16, code: &str) {
    let (got, body) = answer(resp);
    assert_eq!(got, status, "{body}");
    assert_eq!(
        header_of(resp, "content-type"),
        Some("application/problem+json")
    );
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status);
}

// ---------------------------------------------------------------------------------------------
// Creating

async fn creates_an_agent<S: AgentStore>(store: S) {
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    let store = Arc::new(store);
    let function = create_fn(store.clone(), world.client());
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
    assert_eq!(id.len(), usid::prefix(owner).len() + 32);
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
        .query_owner(&usid::owner_keys(owner)[0], 10, None)
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
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let function = create_fn(store, world.client());
    let resp = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Quick", None),
            None,
        ))
        .await;
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
    let function = create_fn(store.clone(), world.client());

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
    let function = create_fn(store.clone(), world.client());

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
    let empty = create_fn(MemoryStore::new(), world.client());
    let resp = empty
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Helper", None),
            None,
        ))
        .await;
    assert_problem(&resp, 503, "NOT_CONFIGURED");
}

#[tokio::test]
async fn invalid_requests_are_problems_and_create_nothing() {
    let store = Arc::new(MemoryStore::new());
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    let function = create_fn(store.clone(), world.client());
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

// ---------------------------------------------------------------------------------------------
// Half-succeeded and failed CreateSession

#[tokio::test]
async fn create_session_fail_with_the_session_created_is_reconciled_to_201() {
    let store = Arc::new(dynamo_store("create-half").await);
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    world
        .sim
        .control()
        .inject(
            Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500)
                .after_apply()
                .next(1),
        )
        .unwrap();
    let function = create_fn(store.clone(), world.client());
    let resp = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Half", None),
            None,
        ))
        .await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 201, "{view}");
    let id = agent_id(&view);
    assert_eq!(view["state"], "starting");
    assert_eq!(creates(&world), 1, "reconciled, not created twice");
    assert_eq!(world.sim.control().counters().live_sessions_of(&id), 1);
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
    let store = Arc::new(dynamo_store("create-fail").await);
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    world
        .sim
        .control()
        .inject(Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500).next(1))
        .unwrap();
    let mut function = create_fn(store.clone(), world.client());
    function.settings.unsettled_window = Duration::from_millis(1500);
    let resp = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Nothing", None),
            None,
        ))
        .await;
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
        .query_owner(&usid::owner_keys("alice")[0], 10, None)
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
    let store = Arc::new(dynamo_store("create-late").await);
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    ctl.inject(Fault::error(Some("CreateSession"), "InternalError", 500).next(1))
        .unwrap();
    let function = create_fn(store.clone(), world.client());
    let req = || {
        create_request(
            Who::User("alice"),
            &body("codex", "Late", None),
            Some("key-late"),
        )
    };
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
    let store = Arc::new(dynamo_store("create-late-sim").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let ctl = world.sim.control();
    ctl.inject(
        Fault::error(Some("CreateSession"), "InternalError", 500)
            .next(1)
            .apply_after(Duration::from_secs(2)),
    )
    .unwrap();
    let function = create_fn(store.clone(), world.client());
    let req = || {
        create_request(
            Who::User("alice"),
            &body("codex", "Late", None),
            Some("key-late-sim"),
        )
    };
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
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    world
        .sim
        .control()
        .inject(Fault::error(Some("CreateSession"), "Throttling", 429).retry_after(1))
        .unwrap();
    let function = create_fn(store.clone(), world.client());
    let resp = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Slow down", None),
            None,
        ))
        .await;
    assert_problem(&resp, 429, "PROVIDER_THROTTLED");
    assert_eq!(answer(&resp).1["retryable"], true);
    assert!(header_of(&resp, "retry-after").is_some());
    assert!(world.sim.control().sessions().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Idempotency-Key

async fn same_key_and_body_replay_one_create<S: AgentStore>(store: S) {
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    let function = create_fn(store, world.client());
    let req = || {
        create_request(
            Who::User("alice"),
            &body("codex", "Once", None),
            Some("key-1"),
        )
    };
    // The first answer is lost on its way back to the client.
    drop(function.handle(req()).await);
    let second = function.handle(req()).await;
    let third = function.handle(req()).await;
    assert_eq!(creates(&world), 1);
    let (status, view) = answer(&second);
    assert_eq!(status, 201, "{view}");
    for h in ["location", "etag", "content-type"] {
        assert_eq!(header_of(&second, h), header_of(&third, h), "{h}");
        assert!(header_of(&second, h).is_some(), "{h}");
    }
    assert_eq!(second.body(), third.body(), "replayed byte for byte");
    assert_eq!(
        world
            .sim
            .control()
            .counters()
            .live_sessions_of(&agent_id(&view)),
        1
    );

    // A body that differs only by an omitted default is the same request.
    let same = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", " Once ", Some("recoverable")),
            Some("key-1"),
        ))
        .await;
    assert_eq!(same.body(), second.body());
    // Another body under the same key: 422.
    let other = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Twice", None),
            Some("key-1"),
        ))
        .await;
    assert_problem(&other, 422, "INVALID_REQUEST");
    assert_eq!(creates(&world), 1);
}

#[tokio::test]
async fn same_key_and_body_replay_one_create_on_dynamodb() {
    same_key_and_body_replay_one_create(dynamo_store("create-idem").await).await;
}

#[tokio::test]
async fn same_key_and_body_replay_one_create_in_memory() {
    same_key_and_body_replay_one_create(MemoryStore::new()).await;
}

#[tokio::test]
async fn a_duplicate_in_flight_gets_409_with_retry_after() {
    let store = Arc::new(dynamo_store("create-inflight").await);
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    world
        .sim
        .control()
        .inject(Fault::latency(Some("CreateSession"), 1500))
        .unwrap();
    let function = Arc::new(create_fn(store.clone(), world.client()));
    let req = || {
        create_request(
            Who::User("alice"),
            &body("codex", "Busy", None),
            Some("key-busy"),
        )
    };
    let first = {
        let function = function.clone();
        let req = req();
        tokio::spawn(async move { function.handle(req).await })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let second = function.handle(req()).await;
    assert_problem(&second, 409, "AGENT_BUSY");
    let (_, problem) = answer(&second);
    assert_eq!(problem["retryable"], true);
    assert!(problem["detail"]
        .as_str()
        .unwrap()
        .contains("still in progress"));
    assert!(header_of(&second, "retry-after").is_some());

    let first = first.await.unwrap();
    assert_eq!(answer(&first).0, 201);
    assert_eq!(creates(&world), 1);
    // Once it finished, the duplicate replays it.
    let later = function.handle(req()).await;
    assert_eq!(later.body(), first.body());
    assert_eq!(header_of(&later, "etag"), header_of(&first, "etag"));
    assert_eq!(creates(&world), 1);
}

#[tokio::test]
async fn a_key_is_per_owner() {
    let store = Arc::new(dynamo_store("create-owner-key").await);
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    let function = create_fn(store.clone(), world.client());
    let alice = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Mine", None),
            Some("shared-key"),
        ))
        .await;
    // Bob's key of the same name is his own, even with another body.
    let bob = function
        .handle(create_request(
            Who::User("bob"),
            &body("codex", "Also mine", None),
            Some("shared-key"),
        ))
        .await;
    let (sa, va) = answer(&alice);
    let (sb, vb) = answer(&bob);
    assert_eq!((sa, sb), (201, 201), "{va} {vb}");
    assert!(agent_id(&va).starts_with("studio-alice-"));
    assert!(agent_id(&vb).starts_with("studio-bob-"));
    assert_eq!(vb["owner"], "bob");
    assert_eq!(creates(&world), 2);
}

/// A create whose CreateSession failed with nothing shown releases its key (202 is not a final
/// answer). A retry inside the window sends nothing; once the window is over, the empty listing
/// is AgentKit's word, and the retry creates the agent with the first attempt's id.
#[tokio::test]
async fn a_retryable_failure_releases_the_key_and_the_retry_creates_the_same_agent() {
    let store = Arc::new(dynamo_store("create-release").await);
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    world
        .sim
        .control()
        .inject(Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500).next(1))
        .unwrap();
    let mut function = create_fn(store.clone(), world.client());
    function.settings.unsettled_window = Duration::from_millis(1500);
    let req = || {
        create_request(
            Who::User("alice"),
            &body("codex", "Again", None),
            Some("key-retry"),
        )
    };
    let first = function.handle(req()).await;
    assert_eq!(answer(&first).0, 202, "{}", answer(&first).1);
    let pk = "IDEM#studio-alice#key-retry";
    let doc = store
        .get_document(DocumentKey { pk, sk: "IDEM" })
        .await
        .unwrap()
        .expect("the idempotency document");
    assert_eq!(doc.value["state"], "failed");
    let minted = doc.value["user_session_id"].as_str().unwrap().to_string();
    assert!(doc.expires_at.is_some());

    let inside = function.handle(req()).await;
    assert_eq!(answer(&inside).0, 202, "{}", answer(&inside).1);
    assert_eq!(creates(&world), 1, "nothing sent inside the window");

    tokio::time::sleep(Duration::from_millis(4000)).await;
    let second = function.handle(req()).await;
    let (status, view) = answer(&second);
    assert_eq!(status, 201, "{view}");
    assert_eq!(
        agent_id(&view),
        minted,
        "the retry keeps the first attempt's id"
    );
    assert_eq!(creates(&world), 2);
    assert_eq!(world.sim.control().counters().live_sessions_of(&minted), 1);
    let doc = store
        .get_document(DocumentKey { pk, sk: "IDEM" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(doc.value["state"], "done");
    assert_eq!(doc.value["status"], 201);
}

/// The first idempotency write lands but its answer is lost: the document, re-read, is this
/// attempt's own, so the create goes on (201) instead of answering 503 and leaving a retry to
/// be told "still in progress" for a minute.
#[tokio::test]
async fn a_first_idempotency_write_whose_answer_was_lost_goes_on() {
    let store = Arc::new(LostAnswers::new(
        dynamo_store("create-idem-lost").await,
        |_, _| false,
        0,
    ));
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    let function = create_fn(store.clone(), world.client());
    let req = || {
        create_request(
            Who::User("alice"),
            &body("codex", "Landed", None),
            Some("key-landed"),
        )
    };
    store.lose_documents.store(1, Ordering::SeqCst);
    let first = function.handle(req()).await;
    let (status, view) = answer(&first);
    assert_eq!(status, 201, "{view}");
    assert_eq!(creates(&world), 1);
    let again = function.handle(req()).await;
    assert_eq!(again.body(), first.body(), "replayed");
    assert_eq!(creates(&world), 1);
}

/// The first idempotency write lands, its answer is lost, and the re-read fails too: 503,
/// retryable. The retry with the same key finds a young `running` document whose attempt never
/// took the agent's lock (no agent record), takes it over at once and creates the agent with
/// the id in it — no 409 "still in progress" for a minute.
#[tokio::test]
async fn a_first_idempotency_write_lost_and_unreadable_is_503_and_the_retry_goes_on() {
    let store = Arc::new(LostAnswers::new(
        dynamo_store("create-idem-unreadable").await,
        |_, _| false,
        0,
    ));
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    let function = create_fn(store.clone(), world.client());
    let req = || {
        create_request(
            Who::User("alice"),
            &body("codex", "Unreadable", None),
            Some("key-unreadable"),
        )
    };
    store.lose_documents.store(1, Ordering::SeqCst);
    store.fail_document_reads.store(1, Ordering::SeqCst);
    let first = function.handle(req()).await;
    assert_problem(&first, 503, "STORE_UNAVAILABLE");
    assert_eq!(answer(&first).1["retryable"], true);
    assert_eq!(creates(&world), 0);
    store.fail_document_reads.store(0, Ordering::SeqCst);
    let doc = store
        .get_document(DocumentKey {
            pk: "IDEM#studio-alice#key-unreadable",
            sk: "IDEM",
        })
        .await
        .unwrap()
        .expect("the first write landed");
    assert_eq!(doc.value["state"], "running");
    let minted = doc.value["user_session_id"].as_str().unwrap().to_string();

    let retry = function.handle(req()).await;
    let (status, view) = answer(&retry);
    assert_eq!(status, 201, "{view}");
    assert_eq!(agent_id(&view), minted, "the first attempt's id");
    assert_eq!(creates(&world), 1);
    assert_eq!(world.sim.control().counters().live_sessions_of(&minted), 1);
}

/// An AgentKit port that lets CreateSession through once, then never answers: the invocation
/// dies right after AgentKit created the session.
struct DieAfterCreate {
    inner: AgentKitClient,
    armed: AtomicBool,
    reached: Notify,
}

impl AgentKit for DieAfterCreate {
    async fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> Result<A::Output, AgentKitError> {
        let out = self.inner.call(region, request, deadline).await;
        if A::NAME == "CreateSession" && self.armed.swap(false, Ordering::SeqCst) {
            self.reached.notify_one();
            std::future::pending::<()>().await;
        }
        out
    }

    fn regions(&self) -> &[String] {
        self.inner.regions()
    }

    fn request_timeout(&self) -> std::time::Duration {
        self.inner.request_timeout()
    }
}

#[tokio::test]
async fn a_dead_attempt_is_taken_over_without_a_second_session() {
    let store = Arc::new(dynamo_store("create-takeover").await);
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    let agentkit = Arc::new(DieAfterCreate {
        inner: world.client(),
        armed: AtomicBool::new(true),
        reached: Notify::new(),
    });
    let mut function = create_fn(store.clone(), agentkit.clone());
    function.settings.stale_running = Duration::from_millis(800);
    function.settings.lock = quick_lock(Duration::from_millis(400));
    let function = Arc::new(function);
    let req = || {
        create_request(
            Who::User("alice"),
            &body("codex", "Phoenix", None),
            Some("key-dead"),
        )
    };
    let first = {
        let function = function.clone();
        let req = req();
        tokio::spawn(async move { function.handle(req).await })
    };
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
    assert_eq!(world.sim.control().counters().live_sessions_of(&id), 1);
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
            snapwake_sim::SeedTool {
                name: "chat-snapshot-sh".into(),
                tool_type: "CodeEnv".into(),
                enable_snapshot: true,
                ..Default::default()
            },
        )
        .unwrap();
    // The registry says cn-beijing, but the recoverable Tool lives in cn-shanghai.
    let mut registry = world.registry();
    registry.kinds.get_mut(&Kind::Codex).unwrap().recoverable = Some(shanghai.clone());
    store.put_registry(&registry, 0).await.unwrap();
    let function = create_fn(store.clone(), world.client());
    let resp = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Far away", None),
            None,
        ))
        .await;
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
    let world = World::start(Duration::from_secs(30)).await;
    world.register(&store).await;
    world
        .sim
        .control()
        .inject(
            Fault::error(Some("CreateSession"), "InternalError", 500)
                .after_apply()
                .next(1),
        )
        .unwrap();
    let function = create_fn(store.clone(), world.client());
    let resp = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Lost answer", None),
            None,
        ))
        .await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 201, "{view}");
    assert_eq!(creates(&world), 1);
    assert_eq!(
        world
            .sim
            .control()
            .counters()
            .live_sessions_of(&agent_id(&view)),
        1
    );
}

/// The delete function over `store` and `agentkit` with short leases.
fn delete_fn<S: AgentStore, K: AgentKit>(store: S, agentkit: K) -> snapwake_delete::Delete<S, K> {
    snapwake_delete::Delete {
        store,
        agentkit,
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        settings: delete_settings(&quick_wake()),
    }
}

/// The one agent record of alice's (the create under test minted its id).
async fn alices_agent<S: AgentStore>(store: &S) -> snapwake::domain::AgentRecord {
    let page = store
        .query_owner(&usid::owner_keys("alice")[0], 10, None)
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
    let store = Arc::new(dynamo_store("create-vs-delete").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let gate = Arc::new(Gate::after(world.client(), "CreateSession"));
    let function = Arc::new(create_fn(store.clone(), gate.clone()));
    let c = tokio::spawn({
        let function = function.clone();
        async move {
            function
                .handle(create_request(
                    Who::User("alice"),
                    &body("codex", "Racy", None),
                    Some("key-race"),
                ))
                .await
        }
    });
    gate.reached().await;
    let record = alices_agent(&store).await;
    assert_eq!(record.state, WakeState::Creating);
    let agent_id = record.key.agent_id.clone();
    let path = format!("/v1/agents/codex/{agent_id}");

    let delete = delete_fn(store.clone(), world.client());
    let (status, problem) = answer(
        &delete
            .handle(request("DELETE", &path, Who::User("alice"), None))
            .await,
    );
    assert_eq!(
        (status, problem["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{problem}"
    );
    assert_eq!(
        world.sim.control().counters().live_sessions_of(&agent_id),
        1
    );
    gate.release.notify_one();
    let created = c.await.unwrap();
    assert_eq!(answer(&created).0, 201);

    let (status, _) = answer(
        &delete
            .handle(request("DELETE", &path, Who::User("alice"), None))
            .await,
    );
    assert_eq!(status, 204);
    assert_eq!(
        world.sim.control().counters().live_sessions_of(&agent_id),
        0
    );
    let api = Api::new(store.clone(), world.client(), identity());
    let (status, _) = answer(
        &api.resume
            .handle(request(
                "POST",
                &format!("{path}/resume"),
                Who::User("alice"),
                None,
            ))
            .await,
    );
    assert_eq!(status, 410);
    // The key replays the create's own answer; nothing is created again.
    let replay = function
        .handle(create_request(
            Who::User("alice"),
            &body("codex", "Racy", None),
            Some("key-race"),
        ))
        .await;
    assert_eq!(replay.body(), created.body());
    assert_eq!(creates(&world), 1);
}

/// An attempt died right after AgentKit created its session; the agent was then deleted. A
/// retry with the same Idempotency-Key takes the attempt over, finds the agent deleted, and
/// answers 410 AGENT_GONE: it creates nothing (no session nobody could see or delete).
#[tokio::test]
async fn a_takeover_that_finds_the_agent_deleted_is_410_and_creates_nothing() {
    let store = Arc::new(dynamo_store("create-gone").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let agentkit = Arc::new(DieAfterCreate {
        inner: world.client(),
        armed: AtomicBool::new(true),
        reached: Notify::new(),
    });
    let mut function = create_fn(store.clone(), agentkit.clone());
    function.settings.stale_running = Duration::from_millis(800);
    function.settings.lock = quick_lock(Duration::from_millis(300));
    let function = Arc::new(function);
    let req = || {
        create_request(
            Who::User("alice"),
            &body("codex", "Lazarus", None),
            Some("key-gone"),
        )
    };
    let first = {
        let function = function.clone();
        let req = req();
        tokio::spawn(async move { function.handle(req).await })
    };
    agentkit.reached.notified().await;
    first.abort();
    let _ = first.await;
    let agent_id = alices_agent(&store).await.key.agent_id;
    assert_eq!(
        world.sim.control().counters().live_sessions_of(&agent_id),
        1
    );

    // Once the dead attempt's lease has passed, the agent is deleted (its session too).
    tokio::time::sleep(Duration::from_millis(600)).await;
    let delete = delete_fn(store.clone(), world.client());
    let (status, body) = answer(
        &delete
            .handle(request(
                "DELETE",
                &format!("/v1/agents/codex/{agent_id}"),
                Who::User("alice"),
                None,
            ))
            .await,
    );
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        world.sim.control().counters().live_sessions_of(&agent_id),
        0
    );

    tokio::time::sleep(Duration::from_millis(400)).await;
    let retry = function.handle(req()).await;
    assert_problem(&retry, 410, "AGENT_GONE");
    assert_eq!(creates(&world), 1, "nothing created again");
    assert_eq!(
        world.sim.control().counters().live_sessions_of(&agent_id),
        0
    );
    // The answer is final for the key: a further retry says the same.
    assert_problem(&function.handle(req()).await, 410, "AGENT_GONE");
}
