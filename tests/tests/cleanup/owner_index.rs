//! The owner index the sweep keeps, and one owner's list served from it.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn after_the_first_sweep_one_owners_list_comes_from_the_index() {
    let dynamo = dynamo_store("cleanup-index").await;
    let store = Arc::new(CountingStore::new(dynamo));
    let world = World::registered(Duration::ZERO, &store).await;
    let fleet = seed_fleet(&world, &["ann", "carol", "dan", "eve", "fay"], 4, 6);
    // One more of carol's: awake on the temporary Tool, no snapshot.
    let live = caller::mint("carol");
    world
        .sim
        .control()
        .seed_session(SeedSession {
            tool_id: world.temporary.clone(),
            user_session_id: Some(live.clone()),
            metadata: vec![
                MetadataEntry::string("Username", "carol"),
                MetadataEntry::string("veadk_display_name", "Live"),
            ],
            ..SeedSession::default()
        })
        .unwrap();
    let mut carols: BTreeSet<String> = fleet
        .iter()
        .filter(|(_, s)| s.owner == "carol")
        .map(|(id, _)| id.clone())
        .collect();
    carols.insert(live.clone());
    let agents = carols.len() as u64;
    let tools = 2;
    let lister = list_fn(store.clone(), world.client(), ListSettings::default());
    let lister = &lister;
    let ctl = world.sim.control();
    let list = move || async move {
        let resp = lister
            .handle(request("GET", "/v1/agents", Who::User("carol"), None))
            .await;
        let (status, body) = answer(&resp);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["partial"], serde_json::json!([]), "{body}");
        body
    };
    let listed = |body: &Value| -> BTreeMap<String, String> {
        body["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["agent_id"].as_str().unwrap().to_string(),
                    a["state"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };

    // Before any sweep: the index is not trusted; the scan reads every snapshot.
    assert!(index_status(&store).await.unwrap().is_none());
    list().await;
    ctl.reset_counters();
    let scanned = list().await;
    let scan_snapshot_pages = ctl.counters().received("ListSessionSnapshots");
    assert_eq!(
        scan_snapshot_pages, 2,
        "the scan pages through all 120 snapshots"
    );
    assert_eq!(
        listed(&scanned).keys().cloned().collect::<BTreeSet<_>>(),
        carols
    );

    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());
    let report = sweep(&f, Duration::from_secs(120)).await;
    assert!(report.completed && report.counts.errors == 0, "{report:?}");
    // 20 snapshot agents and carol's awake one.
    assert_eq!(report.counts.seen, 21, "{report:?}");
    let status = index_status(&store).await.unwrap().unwrap();
    assert!(
        status.covers(&world.registry(), &Kind::ALL),
        "the sweep's completion covers every Tool: {status:?}"
    );

    // The first list after it reads the completion once.
    let before = store.calls.total();
    let first = list().await;
    // The completion and the refresh's marks (for `as_of`), the two owner keys.
    let first_calls = store.calls.total() - before;
    assert!(first_calls <= 4, "{first_calls} DynamoDB calls");
    assert_eq!(listed(&first), listed(&scanned));

    // Warm: the owner index and the records' snapshot summaries; AgentKit only for the live
    // sessions, one listing per Tool, whatever the number of agents.
    let before = store.calls.total();
    ctl.reset_counters();
    let indexed = list().await;
    let dynamo_calls = store.calls.total() - before;
    let calls = world.agentkit_calls();
    eprintln!("index path: {dynamo_calls} DynamoDB calls, {calls} AgentKit calls");
    assert!(dynamo_calls <= 2, "{dynamo_calls} DynamoDB calls");
    assert_eq!(store.calls.get(&store.calls.scans), 0, "no table scan");
    assert!(calls <= tools, "{calls} AgentKit calls for {agents} agents");
    assert_eq!(ctl.counters().received("ListSessionSnapshots"), 0);
    assert!(indexed["as_of"].is_string(), "{indexed}");
    // The same agents, none missing, in the same states.
    assert_eq!(listed(&indexed), listed(&scanned));
    assert_eq!(listed(&indexed)[&live], "awake");
    for id in carols.iter().filter(|id| **id != live) {
        assert_eq!(listed(&indexed)[id], "asleep");
        let view = indexed["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent_id"] == id.as_str())
            .unwrap();
        assert_eq!(view["snapshots"].as_array().unwrap().len(), 3, "{view}");
    }
}
