//! The minute refresh (docs/operations.md, "Index freshness"): a snapshot made outside snapwake
//! is in its owner's list after the next refresh (so within a minute of the schedule), a quiet
//! refresh costs one AgentKit call per snapshot Tool, a snapshot still being made is seen
//! again until it settles, and the list says how fresh it is.

use super::*;

async fn alices_agents<
    S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore,
>(
    f: &snapwake_list::List<S, AgentKitClient>,
) -> (Vec<(String, String)>, Value) {
    let resp = f.handle(alices_request("GET", "/v1/agents")).await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 200, "{body}");
    let agents = body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent_id"].as_str().unwrap_or_default().to_string(),
                a["state"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    (agents, body)
}

/// One refresh, as its schedule runs it: a while after the last one (a record written within
/// the same second as a listing began is taken to know better than the listing).
async fn refresh<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Delete<S, K>,
) -> Value {
    tokio::time::sleep(Duration::from_millis(1100)).await;
    f.invoke(serde_json::json!({"action": "refresh"}), context(55_000))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_made_outside_snapwake_is_listed_after_the_next_refresh() {
    let (store, world, ctl) = deployed("index-freshness", Duration::ZERO).await;
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());
    let list = list_fn(store.clone(), world.client(), ListSettings::default());
    assert!(sweep(&f, Duration::from_secs(60)).await.completed);
    // The first refresh reads each Tool whole once and marks where the next one starts.
    let first = refresh(&f).await;
    assert_eq!(first["errors"], 0, "{first}");
    let (agents, body) = alices_agents(&list).await;
    assert!(agents.is_empty(), "{body}");
    let as_of_before = body["as_of"].as_str().unwrap().to_string();

    // Another system (the Studio) makes a snapshot of an agent of alice's.
    let (outside, _) = world.asleep_agent("alice", "Made elsewhere");
    let (agents, _) = alices_agents(&list).await;
    assert!(
        agents.is_empty(),
        "not indexed yet: the list comes from the index"
    );

    ctl.reset_counters();
    let report = refresh(&f).await;
    eprintln!(
        "refresh with one new snapshot: {} ms, {} AgentKit calls",
        report["duration_ms"],
        world.agentkit_calls()
    );
    assert_eq!(report["indexed"], 1, "{report}");
    assert_eq!(
        world.agentkit_calls(),
        1,
        "one page of what is new: {report}"
    );
    let (agents, body) = alices_agents(&list).await;
    assert_eq!(
        agents,
        vec![(outside.clone(), "asleep".to_string())],
        "{body}"
    );
    assert!(
        body["as_of"].as_str().unwrap() >= as_of_before.as_str(),
        "{body}"
    );
    // The record says who owns it and how it is called, as a snapwake-made one would.
    let record = store.get(&codex(&outside)).await.unwrap().unwrap();
    assert_eq!(
        record.description.display_name.as_deref(),
        Some("Made elsewhere")
    );

    // A quiet minute: one call per snapshot Tool, nothing written.
    ctl.reset_counters();
    let quiet = refresh(&f).await;
    assert_eq!(world.agentkit_calls(), 1, "{quiet}");
    assert_eq!(quiet["calls"], 1, "{quiet}");
    assert_eq!(
        ctl.counters().received("ListSessionSnapshots"),
        1,
        "{quiet}"
    );
    assert_eq!(quiet["indexed"], 0, "{quiet}");
}

/// A burst (a team's sessions expiring in one minute) made outside snapwake: the refresh
/// reads the records of what it lists a hundred a request, writes each new one once, and the
/// minutes after it (which list the burst again, inside the overlap) read as few and write
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_is_read_a_hundred_records_a_request() {
    const BURST: usize = 250;
    let store = Arc::new(CountingStore::new(dynamo_store("index-burst").await));
    let world = World::registered(Duration::ZERO, &store).await;
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());
    assert!(sweep(&f, Duration::from_secs(60)).await.completed);
    let first = refresh(&f).await;
    assert_eq!(first["errors"], 0, "{first}");
    for i in 0..BURST {
        let owner = ["alice", "bob", "carol"][i % 3];
        world.asleep_agent(owner, &format!("Burst {i}"));
    }
    let calls = store.calls.clone();
    let counted = |c: &std::sync::atomic::AtomicU64| calls.get(c);
    let (gets, batches, updates) = (
        counted(&calls.gets),
        counted(&calls.batch_gets),
        counted(&calls.updates),
    );
    let burst = refresh(&f).await;
    assert_eq!(burst["indexed"], BURST, "{burst}");
    assert_eq!(
        counted(&calls.gets) - gets,
        0,
        "no record read one by one: {burst}"
    );
    assert_eq!(
        counted(&calls.batch_gets) - batches,
        3,
        "250 records, 100 a request: {burst}"
    );
    assert_eq!(counted(&calls.updates) - updates, BURST as u64, "{burst}");

    let (batches, updates) = (counted(&calls.batch_gets), counted(&calls.updates));
    let quiet = refresh(&f).await;
    assert_eq!(
        quiet["listed"], BURST,
        "the overlap lists the burst again: {quiet}"
    );
    assert_eq!(quiet["indexed"], 0, "{quiet}");
    assert_eq!(counted(&calls.batch_gets) - batches, 3, "{quiet}");
    assert_eq!(counted(&calls.updates) - updates, 0, "{quiet}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_being_made_is_read_again_until_it_settles() {
    let (store, world, ctl) = deployed("index-freshness-settle", Duration::ZERO).await;
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());
    let list = list_fn(store.clone(), world.client(), ListSettings::default());
    assert!(sweep(&f, Duration::from_secs(60)).await.completed);
    refresh(&f).await;

    // A session another system started expires; AgentKit takes a while to snapshot it, and
    // lists the snapshot late.
    let agent = caller::mint("alice");
    world.live_session("alice", &agent);
    ctl.set_expiry_snapshot_delay(Duration::from_secs(30));
    ctl.set_expiry_snapshot_hidden(Duration::from_secs(20));
    ctl.advance(Duration::from_secs(8 * 3600 + 5));
    let hidden = refresh(&f).await;
    assert_eq!(hidden["indexed"], 0, "not listed yet: {hidden}");
    ctl.advance(Duration::from_secs(20));
    let creating = refresh(&f).await;
    assert_eq!(creating["indexed"], 1, "{creating}");
    let record = store.get(&codex(&agent)).await.unwrap().unwrap();
    assert_eq!(record.snapshots.len(), 1);
    assert!(
        record.snapshots[0]
            .status
            .as_deref()
            .is_some_and(|s| s.eq_ignore_ascii_case("creating")),
        "{record:?}"
    );
    ctl.advance(Duration::from_secs(30));
    let ready = refresh(&f).await;
    assert_eq!(ready["indexed"], 1, "the status moved on: {ready}");
    let (agents, body) = alices_agents(&list).await;
    assert_eq!(
        agents,
        vec![(agent.clone(), "asleep".to_string())],
        "{body}"
    );
    let record = store.get(&codex(&agent)).await.unwrap().unwrap();
    assert_eq!(record.snapshots[0].status.as_deref(), Some("Ready"));
}
