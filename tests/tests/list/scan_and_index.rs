//! The two list paths: the scan of every snapshot before the index sync and the owner index
//! after it list the same agents in the same states; a failing Tool's listing leaves the scan's
//! answer partial (its Tool id for admins only) and costs the index path nothing.

use super::seeds::*;
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_before_the_sync_and_index_after_it_list_the_same_agents() {
    let store = dynamo_store("list-paths").await;
    let world = World::start(Duration::from_secs(3600)).await;
    let s = seed(&store, &world).await;
    let ctl = world.sim.control();
    let f = list_fn(store.clone(), world.client(), ListSettings::default());

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

    // Bob sees his own, never alice's. The mislabelled one is his by its id: its metadata
    // (alice) hides its session from his Username-filtered listing, and the index, which
    // knows it awake, shows it to him (and to nobody else).
    let (_, bobs) = get(&f, "/v1/agents", &[], Who::User("bob")).await;
    assert_eq!(
        ids(&bobs),
        [
            s.bob_asleep.clone(),
            s.bob_awake.clone(),
            s.mislabelled.clone()
        ]
        .into_iter()
        .collect()
    );
    assert!(!ids(&indexed).contains(&s.mislabelled));
    assert!(!ids(&indexed).contains(&s.gone));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tool_still_answers_with_what_the_others_have() {
    let store = dynamo_store("list-partial").await;
    let world = World::start(Duration::ZERO).await;
    let ctl = world.sim.control();
    let legacy_tool = ctl
        .seed_tool(REGION, SeedTool::code_env("old-snapshots", true))
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
    let on_legacy = caller::mint("alice");
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: legacy_tool.clone(),
        user_session_id: Some(on_legacy.clone()),
        ..SeedSnapshot::default()
    })
    .unwrap();
    let f = list_fn(store.clone(), world.client(), ListSettings::default());

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
    assert_eq!(
        ids(&body),
        [on_recoverable, on_legacy].into_iter().collect()
    );
    assert_eq!(body["partial"], serde_json::json!([]));
    assert!(body["as_of"].is_string(), "{body}");
}
