//! The reconciler's runs: from nothing one run creates the seven tools and a second writes
//! nothing, a dry run only plans, snapshots switched off by hand are switched on again, tools
//! not ready in time are finished by the next run, two deploys at once apply once, and a tool
//! named like the reference studio's is adopted, not duplicated.

use super::*;

#[tokio::test]
async fn from_nothing_one_run_creates_seven_tools_and_a_second_run_writes_nothing() {
    let sim = sim(Duration::from_millis(300)).await;
    let ctl = sim.control();
    assert_eq!(ctl.settings().2, Some(3), "the write throttle is on");
    let store = dynamo_store("deploy_from_nothing").await;
    let cat = catalogue(&[]);
    let f = deploy_fn(store, &sim.endpoint(), cat.clone());

    let started = Instant::now();
    let first = run(&f, apply(), Duration::from_secs(60)).await;
    let took = started.elapsed();
    assert_eq!(first.outcome, RunOutcome::Applied);
    assert_eq!(first.count(EntryStatus::Created), 7, "{first:#?}");
    assert_eq!(
        first.writes, 7,
        "recoverable Tools are created with snapshots on"
    );
    assert_eq!(first.throttles, 0);
    assert!(first.registry_written);
    let counters = ctl.counters();
    assert_eq!(counters.received("CreateTool"), 7);
    assert_eq!(counters.received("UpdateTool"), 0);
    assert!(counters.max_tool_writes_per_second <= 3, "{counters:?}");
    assert_eq!(counters.throttled, 0);
    println!(
        "BENCH deploy-from-nothing: {} ms, {} writes, {} GetTool, max {} writes/s",
        took.as_millis(),
        first.writes,
        counters.received("GetTool"),
        counters.max_tool_writes_per_second
    );

    // Every Tool as the catalogue says, recorded in the registry.
    let registry = f.store.get_registry().await.unwrap().unwrap();
    assert_eq!(registry.region.as_deref(), Some(REGION));
    for e in &cat.entries {
        let id = first.entry(&e.key).unwrap().tool_id.clone().unwrap();
        let (_, tool) = ctl.tool(&id).unwrap();
        assert_eq!(tool.name.as_deref(), Some(e.name.as_str()));
        assert_eq!(tool.tool_type.as_deref(), Some(e.tool_type.as_str()));
        assert_eq!(tool.enable_snapshot, Some(e.recoverable));
        assert!(tool.is_ready());
        if let Some(kind) = e.kind {
            assert_eq!(registry.tool(kind, e.retention()), Some(id.as_str()));
        }
    }
    assert!(registry
        .kinds
        .values()
        .all(|k| k.legacy_snapshot_tools.is_empty()));
    assert_one_tool_per_name(&sim.endpoint(), &cat).await;

    // Again: nothing to do.
    ctl.reset_counters();
    let second = run(&f, apply(), Duration::from_secs(60)).await;
    assert_eq!(second.count(EntryStatus::Unchanged), 7, "{second:#?}");
    assert_eq!(second.writes, 0);
    assert!(!second.registry_written);
    assert_eq!(tool_writes(&ctl), 0);
    assert_eq!(
        f.store.get_registry().await.unwrap().unwrap().version,
        registry.version
    );
}

#[tokio::test]
async fn a_dry_run_plans_without_writing() {
    let sim = sim(Duration::ZERO).await;
    let store = dynamo_store("deploy_dry_run").await;
    let f = deploy_fn(store, &sim.endpoint(), catalogue(&[]));
    let event = serde_json::json!({"dry_run": true, "migrate_legacy": false});
    let deadline_ms = snapwake::ambient::now_ms() + 30_000;
    let report = f.handle(event, deadline_ms).await.unwrap();
    assert_eq!(report["outcome"], "planned");
    let entries = report["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 7);
    assert!(entries
        .iter()
        .all(|e| e["status"] == "created" && e["steps"][0] == "create_tool"));
    assert_eq!(tool_writes(&sim.control()), 0);
    assert!(f.store.get_registry().await.unwrap().is_none());
}

#[tokio::test]
async fn snapshots_switched_off_by_hand_are_switched_on_again() {
    let sim = sim(Duration::ZERO).await;
    let ctl = sim.control();
    let store = dynamo_store("deploy_repair").await;
    let f = deploy_fn(store, &sim.endpoint(), catalogue(&[]));
    let first = run(&f, apply(), Duration::from_secs(60)).await;
    let id = first
        .entry("openclaw_snapshot")
        .unwrap()
        .tool_id
        .clone()
        .unwrap();
    let off = UpdateTool {
        tool_id: id.clone(),
        enable_snapshot: Some(false),
        envs: None,
    };
    client(&sim.endpoint())
        .call(REGION, &off, Deadline::after(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(ctl.tool(&id).unwrap().1.enable_snapshot, Some(false));

    ctl.reset_counters();
    let second = run(&f, apply(), Duration::from_secs(60)).await;
    let entry = second.entry("openclaw_snapshot").unwrap();
    assert_eq!(entry.status, EntryStatus::Updated, "{entry:?}");
    assert_eq!(entry.steps, vec!["enable_snapshots", "await_ready"]);
    assert_eq!(second.count(EntryStatus::Unchanged), 6);
    assert_eq!(second.writes, 1);
    assert_eq!(ctl.counters().received("UpdateTool"), 1);
    assert_eq!(ctl.tool(&id).unwrap().1.enable_snapshot, Some(true));
}

#[tokio::test]
async fn tools_not_ready_before_the_deadline_are_pending_and_the_next_run_finishes_them() {
    // Tools take an hour of simulated time: never Ready within this run.
    let sim = sim(Duration::from_secs(3600)).await;
    let ctl = sim.control();
    let store = dynamo_store("deploy_pending").await;
    let cat = catalogue(&[]);
    let f = deploy_fn(store, &sim.endpoint(), cat.clone());

    // Long enough for the seven creates even on a busy machine; never long enough for Ready.
    let first = run(&f, apply(), Duration::from_secs(8)).await;
    assert_eq!(first.count(EntryStatus::Pending), 7, "{first:#?}");
    assert!(first
        .entries
        .iter()
        .all(|e| e.tool_id.is_some() && e.reason.as_deref().unwrap_or("").contains("next run")));
    assert_eq!(first.writes, 7);
    // Nothing usable to record yet.
    let registry = f.store.get_registry().await.unwrap().unwrap_or_default();
    assert!(registry.tool(Kind::Codex, Retention::Recoverable).is_none());

    ctl.advance(Duration::from_secs(3600));
    ctl.reset_counters();
    let second = run(&f, apply(), Duration::from_secs(30)).await;
    // Found by name and taken into the registry; `skill_creator` has no registry slot, so
    // finding it is simply `unchanged`.
    assert_eq!(second.count(EntryStatus::Adopted), 6, "{second:#?}");
    assert_eq!(
        second.entry("skill_creator").unwrap().status,
        EntryStatus::Unchanged
    );
    assert_eq!(second.writes, 0, "found by name, not created again");
    assert_eq!(tool_writes(&ctl), 0);
    let registry = f.store.get_registry().await.unwrap().unwrap();
    for e in first.entries.iter().filter(|e| e.kind.is_some()) {
        assert_eq!(
            registry.tool(e.kind.unwrap(), e.retention),
            e.tool_id.as_deref()
        );
    }
    assert_one_tool_per_name(&sim.endpoint(), &cat).await;
}

#[tokio::test]
async fn two_deploys_at_once_one_applies_and_the_other_says_already_running() {
    let sim = sim(Duration::from_millis(200)).await;
    let store = Arc::new(dynamo_store("deploy_race").await);
    let cat = catalogue(&[]);
    let a = deploy_fn(store.clone(), &sim.endpoint(), cat.clone());
    let b = deploy_fn(store.clone(), &sim.endpoint(), cat.clone());
    let scheduled = serde_json::json!({"version": "0", "id": "e-1", "detail-type": "Scheduled Event",
        "source": "aws.events", "account": "1", "time": "2026-01-01T00:00:00Z",
        "region": "us-east-1", "resources": [], "detail": {}});
    let deadline_ms = snapwake::ambient::now_ms() + 60_000;
    let (ra, rb) = tokio::join!(
        a.handle(scheduled.clone(), deadline_ms),
        b.handle(scheduled.clone(), deadline_ms)
    );
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    let mut outcomes = [ra["outcome"].clone(), rb["outcome"].clone()];
    outcomes.sort_by_key(|o| o.to_string());
    assert_eq!(outcomes, ["already_running", "applied"], "{ra:#}\n{rb:#}");
    let loser = if ra["outcome"] == "already_running" {
        &ra
    } else {
        &rb
    };
    assert!(loser["message"]
        .as_str()
        .unwrap()
        .contains("already running"));
    assert_eq!(loser["writes"], 0);
    assert_eq!(sim.control().counters().received("CreateTool"), 7);
    assert_one_tool_per_name(&sim.endpoint(), &cat).await;

    // The lock was released: the next run takes it and has nothing to do.
    let again = run(&a, apply(), Duration::from_secs(30)).await;
    assert_eq!(again.outcome, RunOutcome::Applied);
    assert_eq!(again.count(EntryStatus::Unchanged), 7);
}

#[tokio::test]
async fn a_tool_named_like_the_reference_studios_is_adopted_not_duplicated() {
    let sim = sim(Duration::ZERO).await;
    let ctl = sim.control();
    let name = tool_name(APP, "chat-snapshot");
    assert!(name.starts_with("veadk-studio-acme-studio-chat-snapshot-"));
    let studio = ctl
        .seed_tool(REGION, SeedTool::code_env(name.clone(), true))
        .unwrap();
    let store = dynamo_store("deploy_adopt").await;
    let cat = catalogue(&[]);
    let f = deploy_fn(store, &sim.endpoint(), cat.clone());
    let report = run(&f, apply(), Duration::from_secs(60)).await;
    let entry = report.entry("codex_snapshot").unwrap();
    assert_eq!(entry.status, EntryStatus::Adopted, "{entry:?}");
    assert_eq!(entry.tool_id.as_deref(), Some(studio.as_str()));
    assert_eq!(report.count(EntryStatus::Created), 6);
    assert_eq!(ctl.counters().received("CreateTool"), 6);
    let registry = f.store.get_registry().await.unwrap().unwrap();
    assert_eq!(
        registry.tool(Kind::Codex, Retention::Recoverable),
        Some(studio.as_str())
    );
    assert_one_tool_per_name(&sim.endpoint(), &cat).await;
}
