//! The list function end to end: API Gateway v2 requests into the handler, records on DynamoDB
//! Local, AgentKit simulated over HTTP; and the index sync that lets a list of one owner skip
//! the scan of every snapshot.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use data_encoding::BASE64URL_NOPAD;
use serde_json::Value;
use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::AgentKitClient;
use snapwake::deadline::Deadline;
use snapwake::domain::Description;
use snapwake::domain::{AgentKey, AgentRecord, Kind, Retention, ToolRegistry, WakeState};
use snapwake::identity::usid;
use snapwake::index_sync::{sync_index, IndexSyncReport};
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::{AgentStore, Changes, Condition};
use snapwake::timestamp::{now_ms, now_s};
use snapwake_list::{List, ListSettings};
use snapwake_sim::{Fault, SeedSession, SeedSnapshot, SeedTool};
use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;

fn list_fn<S: AgentStore>(store: S, agentkit: AgentKitClient) -> List<S, AgentKitClient> {
    List::new(
        store,
        agentkit,
        RegistryCache::new(ToolOverrides::default()),
        identity(),
        ListSettings {
            lock: snapwake::lock::LockSettings::default(),
            cursor_key: None,
        },
    )
}

async fn get<S: AgentStore>(
    f: &List<S, AgentKitClient>,
    path: &str,
    query: &[(&str, &str)],
    who: Who<'_>,
) -> (u16, Value) {
    answer(&f.handle(request_query("GET", path, query, who)).await)
}

async fn sync<S: AgentStore>(store: &S, world: &World, registry: &ToolRegistry) -> IndexSyncReport {
    sync_index(
        store,
        &world.client(),
        registry,
        Deadline::after(Duration::from_secs(120)),
    )
    .await
}

/// What both list paths must agree on, per agent, in order.
fn summary(body: &Value) -> Vec<(String, String, String, String, Value, Value)> {
    body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap().to_string(),
                a["agent_id"].as_str().unwrap().to_string(),
                a["state"].as_str().unwrap().to_string(),
                a["display_name"].as_str().unwrap().to_string(),
                a["wake"]["state"].clone(),
                a["owner"].clone(),
            )
        })
        .collect()
}

fn ids(body: &Value) -> BTreeSet<String> {
    body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_id"].as_str().unwrap().to_string())
        .collect()
}

fn agent<'a>(body: &'a Value, id: &str) -> &'a Value {
    body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent_id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed in {body}"))
}

/// A live session on `tool` (Ready, or `Creating` for a long while) whose metadata names
/// `username` and `name`.
fn session(world: &World, tool: &str, usid: &str, username: &str, name: &str, status: &str) {
    world
        .sim
        .control()
        .seed_session(SeedSession {
            tool_id: tool.into(),
            user_session_id: Some(usid.into()),
            status: Some(status.into()),
            metadata: vec![
                MetadataEntry::string("Username", username),
                MetadataEntry::string("veadk_display_name", name),
            ],
            ..SeedSession::default()
        })
        .unwrap();
}

/// A record as the resume or delete function would leave it.
async fn record<S: AgentStore>(
    store: &S,
    world: &World,
    id: &str,
    changes: Changes,
) -> AgentRecord {
    let key = AgentKey::new(Kind::Codex, id);
    let describe = Description {
        owner: Some("alice".into()),
        owner_key: usid::UserSessionId::parse(id).owner_key(),
        tool_id: Some(world.recoverable.clone()),
        region: Some(REGION.into()),
        retention: Some(Retention::Recoverable),
        ..Description::default()
    };
    store
        .update(
            &key,
            &Condition::Absent,
            &Changes {
                // A name the caller gives (a wake's acquire writes the agent's) is kept.
                describe: Some(Description {
                    display_name: changes
                        .describe
                        .as_ref()
                        .and_then(|d| d.display_name.clone()),
                    ..describe
                }),
                ..changes
            },
        )
        .await
        .unwrap()
}

/// Alice's, Bob's and nobody's agents in every state a list distinguishes.
struct Seeded {
    asleep: String,
    awake_temporary: String,
    starting: String,
    resumed: String,
    failed: String,
    waking: String,
    gone: String,
    legacy: String,
    bob_asleep: String,
    bob_awake: String,
    mislabelled: String,
    ownerless: String,
    older: String,
}

async fn seed<S: AgentStore>(store: &S, world: &World) -> Seeded {
    world.register(store).await;
    let ctl = world.sim.control();
    let (asleep, _) = world.asleep_agent("alice", "Sleepy");
    // Two more snapshots of the same agent, older and newer, so they spread over pages.
    for at in ["2026-01-01T00:00:00Z", "2030-01-01T00:00:00Z"] {
        ctl.seed_snapshot(SeedSnapshot {
            tool_id: world.recoverable.clone(),
            user_session_id: Some(asleep.clone()),
            created_at: Some(
                time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
                    .unwrap(),
            ),
            session_metadata: vec![
                MetadataEntry::string("Username", "alice"),
                MetadataEntry::string("veadk_display_name", "Sleepy"),
            ],
            ..SeedSnapshot::default()
        })
        .unwrap();
    }
    let awake_temporary = usid::mint("alice");
    session(
        world,
        &world.temporary,
        &awake_temporary,
        "alice",
        "Live",
        "Ready",
    );
    let starting = usid::mint("alice");
    session(
        world,
        &world.temporary,
        &starting,
        "alice",
        "Starting",
        "Creating",
    );
    let (resumed, _) = world.asleep_agent("alice", "Resumed");
    // Resumed sessions carry their snapshot's metadata.
    session(
        world,
        &world.recoverable,
        &resumed,
        "alice",
        "Resumed",
        "Ready",
    );
    let (failed, _) = world.asleep_agent("alice", "Failed");
    record(
        store,
        world,
        &failed,
        Changes {
            state: Some(WakeState::Failed),
            error: Some(Some("session failed".into())),
            ..Changes::default()
        },
    )
    .await;
    let (waking, _) = world.asleep_agent("alice", "Waking");
    record(
        store,
        world,
        &waking,
        Changes {
            state: Some(WakeState::Waking),
            holder: Some(Some("h".into())),
            bump_fence: true,
            lease_until_ms: Some(now_ms() + 600_000),
            // As a wake's acquire describes the agent it holds.
            describe: Some(Description {
                display_name: Some("Waking".into()),
                ..Description::default()
            }),
            ..Changes::default()
        },
    )
    .await;
    let (gone, _) = world.asleep_agent("alice", "Gone");
    record(
        store,
        world,
        &gone,
        Changes {
            state: Some(WakeState::Gone),
            expires_at: Some(Some(now_s() + 86_400)),
            ..Changes::default()
        },
    )
    .await;
    let legacy = format!(
        "studio2-{}-0123456789abcdef-{}",
        usid::fingerprint("alice"),
        BASE64URL_NOPAD.encode("Alice Old".as_bytes())
    );
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: world.recoverable.clone(),
        user_session_id: Some(legacy.clone()),
        ..SeedSnapshot::default()
    })
    .unwrap();
    let (bob_asleep, _) = world.asleep_agent("bob", "Bob's");
    let bob_awake = usid::mint("bob");
    session(
        world,
        &world.temporary,
        &bob_awake,
        "bob",
        "Bob live",
        "Ready",
    );
    // Metadata says alice, the id says bob: the id wins.
    let mislabelled = usid::mint("bob");
    session(
        world,
        &world.temporary,
        &mislabelled,
        "alice",
        "Trick",
        "Ready",
    );
    let snap = ctl
        .seed_snapshot(SeedSnapshot {
            tool_id: world.recoverable.clone(),
            ..SeedSnapshot::default()
        })
        .unwrap();
    let older = format!("studio-{}", uuid::Uuid::new_v4().hyphenated());
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: world.recoverable.clone(),
        user_session_id: Some(older.clone()),
        ..SeedSnapshot::default()
    })
    .unwrap();
    Seeded {
        asleep,
        awake_temporary,
        starting,
        resumed,
        failed,
        waking,
        gone,
        legacy,
        bob_asleep,
        bob_awake,
        mislabelled,
        ownerless: format!("snapshot-{snap}"),
        older,
    }
}

fn alices(s: &Seeded) -> BTreeSet<String> {
    [
        &s.asleep,
        &s.awake_temporary,
        &s.starting,
        &s.resumed,
        &s.failed,
        &s.waking,
        &s.legacy,
    ]
    .into_iter()
    .cloned()
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_follow_the_registry() {
    let store = dynamo_store("list-capabilities").await;
    let world = World::start(Duration::ZERO).await;
    let f = list_fn(store.clone(), world.client());
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
    let f = list_fn(store.clone(), world.client());
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_before_the_sync_and_index_after_it_list_the_same_agents() {
    let store = dynamo_store("list-paths").await;
    let world = World::start(Duration::from_secs(3600)).await;
    let s = seed(&store, &world).await;
    let ctl = world.sim.control();
    let f = list_fn(store.clone(), world.client());

    ctl.reset_counters();
    let (status, scanned) = get(&f, "/v1/agents", &[], Who::User("alice")).await;
    assert_eq!(status, 200, "{scanned}");
    // The scan read the snapshot Tool's one page; the index was not used.
    assert_eq!(ctl.counters().received("ListSessionSnapshots"), 1);
    assert_eq!(ids(&scanned), alices(&s));
    assert_eq!(scanned["truncated"], false);
    assert_eq!(scanned["partial"], serde_json::json!([]));
    assert_eq!(agent(&scanned, &s.asleep)["state"], "asleep");
    assert_eq!(agent(&scanned, &s.asleep)["display_name"], "Sleepy");
    assert_eq!(
        agent(&scanned, &s.asleep)["snapshots"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    assert_eq!(agent(&scanned, &s.awake_temporary)["state"], "awake");
    assert_eq!(
        agent(&scanned, &s.awake_temporary)["retention"],
        "temporary"
    );
    assert_eq!(agent(&scanned, &s.starting)["state"], "starting");
    assert_eq!(agent(&scanned, &s.resumed)["state"], "awake");
    assert_eq!(agent(&scanned, &s.failed)["state"], "asleep");
    assert_eq!(agent(&scanned, &s.failed)["wake"]["state"], "failed");
    // The record's reason is for operators: the view shows a code and snapwake's words.
    let failed_wake = &agent(&scanned, &s.failed)["wake"];
    assert_eq!(failed_wake["error_code"], "WAKE_FAILED", "{failed_wake}");
    assert!(
        failed_wake["error"]
            .as_str()
            .is_some_and(|e| e.contains("wake it again") && !e.contains("session failed")),
        "{failed_wake}"
    );
    assert_eq!(agent(&scanned, &s.waking)["state"], "waking");
    assert_eq!(agent(&scanned, &s.legacy)["display_name"], "Alice Old");
    assert!(
        !scanned.to_string().contains("sandbox.example"),
        "no endpoint"
    );
    // Newest activity first: the agent with a snapshot of 2030 leads.
    assert_eq!(scanned["agents"][0]["agent_id"], s.asleep.as_str());

    let report = sync(&store, &world, &world.registry()).await;
    assert!(report.completed, "{report:?}");
    // alice: 6 snapshot agents; bob 1; the ownerless and the older id; and the 4 agents
    // awake without a snapshot (alice's temporary, starting and resumed ones, bob's awake
    // one), which the index covers too.
    assert_eq!(report.seen, 13, "{report:?}");
    // Every agent but the gone one (left alone) and the waking one (its lock is held) is
    // written: new records, or existing ones filled in.
    assert_eq!((report.indexed, report.errors), (11, 0), "{report:?}");
    let again = sync(&store, &world, &world.registry()).await;
    assert_eq!(
        (again.indexed, again.unchanged, again.completed),
        (0, 13, true),
        "{again:?}"
    );

    ctl.reset_counters();
    let (status, indexed) = get(&f, "/v1/agents", &[], Who::User("alice")).await;
    assert_eq!(status, 200, "{indexed}");
    // The snapshots come from the records the sync wrote: no listing per agent.
    assert_eq!(ctl.counters().received("ListSessionSnapshots"), 0);
    // The same agents in the same states. The order may differ for the one agent whose lock
    // was held during the sync: its record has no snapshot summaries yet to date it by.
    let sorted = |v: &serde_json::Value| {
        let mut s = summary(v);
        s.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        s
    };
    assert_eq!(sorted(&indexed), sorted(&scanned));
    // The index sync recorded the legacy agent's name, and its records carry ETags now.
    let legacy = store
        .get(&AgentKey::new(Kind::Codex, s.legacy.as_str()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        legacy.description.display_name.as_deref(),
        Some("Alice Old")
    );
    assert!(agent(&indexed, &s.asleep)["etag"].is_string());

    // Bob sees his own, never alice's, and never the mislabelled one by its metadata.
    let (_, bobs) = get(&f, "/v1/agents", &[], Who::User("bob")).await;
    assert_eq!(
        ids(&bobs),
        [s.bob_asleep.clone(), s.bob_awake.clone()]
            .into_iter()
            .collect()
    );
    assert!(!ids(&indexed).contains(&s.mislabelled));
    assert!(!ids(&indexed).contains(&s.gone));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_list_one_owner_or_page_everyone_exactly_once() {
    let store = dynamo_store("list-admin").await;
    let world = World::start(Duration::from_secs(3600)).await;
    let s = seed(&store, &world).await;
    let f = list_fn(store.clone(), world.client());

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_missing_identity_and_single_agents() {
    let store = dynamo_store("list-single").await;
    let world = World::start(Duration::from_secs(3600)).await;
    let s = seed(&store, &world).await;
    let f = list_fn(store.clone(), world.client());

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
        get(&f, &one(&usid::mint("alice")), &[], Who::User("alice"))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tool_still_answers_with_what_the_others_have() {
    let store = dynamo_store("list-partial").await;
    let world = World::start(Duration::ZERO).await;
    let ctl = world.sim.control();
    let legacy_tool = ctl
        .seed_tool(
            REGION,
            SeedTool {
                name: "old-snapshots".into(),
                tool_type: "CodeEnv".into(),
                enable_snapshot: true,
                ..SeedTool::default()
            },
        )
        .unwrap();
    let mut registry = world.registry();
    registry
        .kinds
        .get_mut(&Kind::Codex)
        .unwrap()
        .legacy_snapshot_tools
        .push(legacy_tool.clone());
    store.put_registry(&registry, 0).await.unwrap();
    let (on_recoverable, _) = world.asleep_agent("alice", "New");
    let on_legacy = usid::mint("alice");
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: legacy_tool.clone(),
        user_session_id: Some(on_legacy.clone()),
        ..SeedSnapshot::default()
    })
    .unwrap();
    let f = list_fn(store.clone(), world.client());

    // The scan reads the recoverable Tool first: its listing fails (a client error, so not
    // retried), the legacy Tool's answers.
    ctl.inject(Fault::error(Some("ListSessionSnapshots"), "InvalidParameter", 400).next(1))
        .unwrap();
    let (status, body) = get(&f, "/v1/agents", &[], Who::User("alice")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), [on_legacy.clone()].into_iter().collect());
    // Kind and region; the Tool id only for admins.
    assert_eq!(
        body["partial"],
        serde_json::json!([{
            "kind": "codex",
            "region": REGION,
            "error": "ListSessionSnapshots: InvalidParameter (HTTP 400)",
        }])
    );
    ctl.inject(Fault::error(Some("ListSessionSnapshots"), "InvalidParameter", 400).next(1))
        .unwrap();
    let (status, body) = get(&f, "/v1/agents", &[("owner", "alice")], Who::Admin("root")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["partial"][0]["tool_id"],
        world.recoverable.as_str(),
        "{body}"
    );
    let (_, body) = get(&f, "/v1/agents", &[], Who::User("alice")).await;
    assert_eq!(body["partial"], serde_json::json!([]));
    assert_eq!(ids(&body).len(), 2);

    // The index path reads no snapshot listing at all: a failing one costs it nothing, and
    // the answer says how fresh its snapshots are.
    assert!(sync(&store, &world, &registry).await.completed);
    ctl.inject(Fault::error(Some("ListSessionSnapshots"), "InvalidParameter", 400).next(1))
        .unwrap();
    let (status, body) = get(&f, "/v1/agents", &[], Who::User("alice")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), [on_recoverable, on_legacy].into_iter().collect());
    assert_eq!(body["partial"], serde_json::json!([]));
    assert!(body["as_of"].is_string(), "{body}");
}

// --------------------------------------------------------------------------------------------- The
// budget (docs/architecture.md, "Quality bars and where they are checked"): one owner's list among
// 20,000 snapshots of 1,000 owners.

fn agentkit_calls(world: &World) -> u64 {
    world
        .sim
        .control()
        .counters()
        .actions
        .values()
        .map(|a| a.received)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_owner_among_20000_snapshots_costs_two_queries_and_one_call_per_tool() {
    const OWNERS: usize = 1000;
    let dynamo = dynamo_store("list-budget").await;
    let store = Arc::new(CountingStore::new(dynamo));
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    // owner-0000: 10 agents of 2 snapshots; 999 others: 2 agents of 10 snapshots.
    let mut seeds = Vec::new();
    let mut mine = BTreeSet::new();
    for o in 0..OWNERS {
        let owner = format!("owner-{o:04}");
        let (agents, per_agent) = if o == 0 { (10, 2) } else { (2, 10) };
        for _ in 0..agents {
            let id = usid::mint(&owner);
            if o == 0 {
                mine.insert(id.clone());
            }
            for _ in 0..per_agent {
                seeds.push(SeedSnapshot {
                    tool_id: world.recoverable.clone(),
                    user_session_id: Some(id.clone()),
                    session_metadata: vec![MetadataEntry::string("Username", &owner)],
                    ..SeedSnapshot::default()
                });
            }
        }
    }
    assert_eq!(seeds.len(), 20_000);
    let ctl = world.sim.control();
    ctl.seed_snapshots(seeds).unwrap();
    let f = list_fn(store.clone(), world.client());
    let me = Who::User("owner-0000");

    // Before the sync: the reference Studio's scan of every snapshot.
    ctl.reset_counters();
    let (status, scanned) = get(&f, "/v1/agents", &[], me).await;
    assert_eq!(status, 200);
    assert_eq!(ids(&scanned), mine);
    let scan_pages = ctl.counters().received("ListSessionSnapshots");
    assert!((200..=201).contains(&scan_pages), "{scan_pages} pages");
    eprintln!(
        "scan path: {} AgentKit calls ({scan_pages} snapshot pages)",
        agentkit_calls(&world)
    );

    let report = sync(&store, &world, &world.registry()).await;
    assert!(report.completed && report.errors == 0, "{report:?}");
    assert_eq!(report.seen, 10 + 2 * (OWNERS as u64 - 1));

    // The first list after the sync also reads the sync's completion once.
    let before = store.calls.total();
    let (_, first) = get(&f, "/v1/agents", &[], me).await;
    assert!(store.calls.total() - before <= 4);
    assert_eq!(summary(&first), summary(&scanned));

    // A warm list: the two owner-index queries and the refresh's marks (for `as_of`), one
    // Username-filtered listing per Tool, nothing per agent.
    let before = store.calls.total();
    ctl.reset_counters();
    let (status, indexed) = get(&f, "/v1/agents", &[], me).await;
    assert_eq!(status, 200);
    assert_eq!(summary(&indexed), summary(&scanned));
    let dynamo_calls = store.calls.total() - before;
    let counters = ctl.counters();
    let calls = agentkit_calls(&world);
    eprintln!("index path: {dynamo_calls} DynamoDB calls, {calls} AgentKit calls");
    assert!(dynamo_calls <= 3, "{dynamo_calls} DynamoDB calls");
    assert_eq!(counters.received("ListSessionSnapshots"), 0);
    assert_eq!(counters.received("ListSessions"), 2);
    let tools = 2;
    assert!(calls <= tools, "{calls} AgentKit calls");
    assert!(
        calls * 10 < scan_pages,
        "the index path is far cheaper than the scan"
    );
}

/// The 1000-agent cap of a list counts agents it shows, not records: an owner whose index
/// holds over 1000 tombstones (and ended temporary agents) newer than their live agents still
/// sees every live agent, and the list is not `truncated`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_of_a_list_counts_live_agents_not_tombstones() {
    let store = Arc::new(snapwake::store::memory::MemoryStore::new());
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let live: BTreeSet<String> = (0..3)
        .map(|i| world.asleep_agent("alice", &format!("Alive {i}")).0)
        .collect();
    let registry = world.registry();
    assert!(sync(&store, &world, &registry).await.completed);
    // 1,001 deleted agents and 5 ended temporary ones, all created after the live ones.
    let owner_key = usid::owner_keys("alice")[0].clone();
    let later = snapwake::timestamp::format_ms(now_ms() + 3_600_000);
    for i in 0..1006 {
        let key = AgentKey::new(Kind::Codex, usid::mint("alice"));
        let ended_temporary = i >= 1001;
        let changes = Changes {
            state: Some(if ended_temporary {
                WakeState::Asleep
            } else {
                WakeState::Gone
            }),
            expires_at: Some((!ended_temporary).then(|| now_s() + 86_400)),
            describe: Some(Description {
                owner: Some("alice".into()),
                owner_key: Some(owner_key.clone()),
                retention: Some(if ended_temporary {
                    Retention::Temporary
                } else {
                    Retention::Recoverable
                }),
                tool_id: Some(if ended_temporary {
                    world.temporary.clone()
                } else {
                    world.recoverable.clone()
                }),
                region: Some(REGION.into()),
                created_at: Some(later.clone()),
                ..Description::default()
            }),
            ..Changes::default()
        };
        store
            .update(&key, &Condition::Absent, &changes)
            .await
            .unwrap();
    }
    let f = list_fn(store.clone(), world.client());
    let (status, body) = get(&f, "/v1/agents", &[], Who::User("alice")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), live, "every live agent, and nothing else");
    assert_eq!(body["truncated"], false);
}

/// An admin's pages of everyone come from the index: over 2,000 snapshots of 100 owners, every
/// agent exactly once, every page but the last full, and not one AgentKit call for any page.
/// An agent woken, its snapshot deleted, or deleted through snapwake shows so on the next
/// admin page, without waiting for a sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everyone_is_paged_from_the_index_once_full_and_current() {
    const OWNERS: usize = 100;
    const AGENTS_PER_OWNER: usize = 10;
    let store = Arc::new(dynamo_store("list-everyone").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let base = time::OffsetDateTime::now_utc() - Duration::from_secs(48 * 3600);
    let mut seeds = Vec::new();
    let mut everyone = BTreeSet::new();
    let mut owner_of = std::collections::BTreeMap::new();
    for o in 0..OWNERS {
        let owner = format!("owner-{o:03}");
        for a in 0..AGENTS_PER_OWNER {
            let id = usid::mint(&owner);
            everyone.insert(id.clone());
            owner_of.insert(id.clone(), owner.clone());
            for s in 0..2u64 {
                seeds.push(SeedSnapshot {
                    tool_id: world.recoverable.clone(),
                    user_session_id: Some(id.clone()),
                    created_at: Some(base + Duration::from_secs((o * 100 + a * 2) as u64 + s)),
                    session_metadata: vec![MetadataEntry::string("Username", &owner)],
                    ..SeedSnapshot::default()
                });
            }
        }
    }
    assert_eq!(seeds.len(), 2_000);
    let ctl = world.sim.control();
    ctl.seed_snapshots(seeds).unwrap();
    assert!(sync(&store, &world, &world.registry()).await.completed);
    let f = list_fn(store.clone(), world.client());
    let admin = Who::Admin("root");

    /// Every page of everyone: (sizes of the pages, the agents by id).
    async fn all_pages<S: AgentStore>(
        f: &List<S, AgentKitClient>,
        admin: Who<'_>,
        limit: &str,
    ) -> (Vec<usize>, Vec<Value>) {
        let mut sizes = Vec::new();
        let mut agents = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut q = vec![("owner", "*"), ("limit", limit)];
            if let Some(c) = cursor.as_deref() {
                q.push(("cursor", c));
            }
            let (status, page) = get(f, "/v1/agents", &q, admin).await;
            assert_eq!(status, 200, "{page}");
            assert_eq!(page["partial"], serde_json::json!([]), "{page}");
            let list = page["agents"].as_array().unwrap().clone();
            sizes.push(list.len());
            agents.extend(list);
            assert!(sizes.len() < 200, "paging does not end");
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => return (sizes, agents),
            }
        }
    }

    ctl.reset_counters();
    let (sizes, agents) = all_pages(&f, admin, "50").await;
    let seen: Vec<String> = agents
        .iter()
        .map(|a| a["agent_id"].as_str().unwrap().to_string())
        .collect();
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "an agent appeared twice");
    assert_eq!(unique, everyone, "every agent, and nothing else");
    let (last, full) = sizes.split_last().unwrap();
    assert!(
        full.iter().all(|n| *n == 50),
        "every page but the last is full: {sizes:?}"
    );
    assert!(*last <= 50);
    let calls: u64 = ctl.counters().actions.values().map(|a| a.received).sum();
    assert_eq!(calls, 0, "listing everyone asks AgentKit nothing");
    for a in &agents {
        let id = a["agent_id"].as_str().unwrap();
        assert_eq!(a["owner"], owner_of[id].as_str());
        assert_eq!(a["state"], "asleep");
        assert_eq!(a["snapshots"].as_array().unwrap().len(), 2);
        assert!(a["as_of"].is_string(), "{a}");
    }

    // Snapwake's own writes show on the next admin page: a wake, a sleep (of an agent woken
    // first), a snapshot delete, a delete.
    let mut ids = everyone.iter();
    let (woken, slept, trimmed, deleted) = (
        ids.next().unwrap().clone(),
        ids.next().unwrap().clone(),
        ids.next().unwrap().clone(),
        ids.next().unwrap().clone(),
    );
    let api = Api::new(store.clone(), world.client(), identity());
    let owner = |id: &str| Who::User(owner_of[id].as_str());
    let (status, body) = answer(
        &api.resume
            .handle(request(
                "POST",
                &format!("/v1/agents/codex/{woken}/resume"),
                owner(&woken),
                None,
            ))
            .await,
    );
    assert_eq!(status, 200, "{body}");
    let before_sleep = world.snapshots_of(&slept);
    for verb in ["resume", "sleep"] {
        let (status, answered) = answer(
            &api.resume
                .handle(request(
                    "POST",
                    &format!("/v1/agents/codex/{slept}/{verb}"),
                    owner(&slept),
                    None,
                ))
                .await,
        );
        assert_eq!(status, 200, "{verb}: {answered}");
    }
    let sleep_snapshot = world
        .snapshots_of(&slept)
        .into_iter()
        .find(|s| !before_sleep.contains(s))
        .expect("the sleep took a snapshot");
    let trimmed_snapshot = world.snapshots_of(&trimmed)[0].clone();
    let (status, _) = answer(
        &api.delete
            .handle(request(
                "DELETE",
                &format!("/v1/agents/codex/{trimmed}/snapshots/{trimmed_snapshot}"),
                owner(&trimmed),
                None,
            ))
            .await,
    );
    assert_eq!(status, 204);
    let (status, _) = answer(
        &api.delete
            .handle(request(
                "DELETE",
                &format!("/v1/agents/codex/{deleted}"),
                owner(&deleted),
                None,
            ))
            .await,
    );
    assert_eq!(status, 204);
    let (_, agents) = all_pages(&f, admin, "100").await;
    let find = |id: &str| agents.iter().find(|a| a["agent_id"] == id);
    assert_eq!(find(&woken).unwrap()["state"], "awake");
    assert_eq!(
        find(&woken).unwrap()["session"]["session_id"],
        body["session"]["session_id"]
    );
    let asleep = find(&slept).unwrap();
    assert_eq!(asleep["state"], "asleep", "{asleep}");
    assert!(asleep["session"].is_null(), "{asleep}");
    assert_eq!(
        asleep["snapshots"][0]["snapshot_id"],
        sleep_snapshot.as_str(),
        "{asleep}"
    );
    let left = find(&trimmed).unwrap()["snapshots"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(left.len(), 1);
    assert_ne!(left[0]["snapshot_id"], trimmed_snapshot.as_str());
    assert!(
        find(&deleted).is_none(),
        "a deleted agent is gone from the pages"
    );
    assert_eq!(agents.len(), everyone.len() - 1);
}
