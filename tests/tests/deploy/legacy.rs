//! Legacy single-Tool deployments: without migration the tool stays temporary and its
//! snapshots wakeable; with it the tool is adopted as recoverable beside a new temporary one;
//! a former recoverable tool stays listed until its snapshots are gone.

use super::*;

// ---------------------------------------------------------------------------------------------
// Legacy single-Tool deployments

/// A legacy codex Tool (snapshots switched on by hand) with one asleep agent of `owner`.
fn legacy_tool(ctl: &SimControl, owner: &str) -> (String, String) {
    let tool = ctl
        .seed_tool(REGION, SeedTool::code_env("studio-codex", true))
        .unwrap();
    let agent = asleep_on(ctl, &tool, owner);
    (tool, agent)
}

fn asleep_on(ctl: &SimControl, tool: &str, owner: &str) -> String {
    let agent_id = caller::mint(owner);
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: tool.to_string(),
        user_session_id: Some(agent_id.clone()),
        session_metadata: vec![
            MetadataEntry::string("Username", owner),
            MetadataEntry::string("veadk_display_name", "Legacy"),
        ],
        ..SeedSnapshot::default()
    })
    .unwrap();
    agent_id
}

/// Wake `agent_id` of `owner` through the resume function, with the deploy function's
/// explicit ids in its environment too.
async fn wake<S: AgentStore + snapwake::store::ScheduleStore>(
    store: S,
    endpoint: &str,
    overrides: ToolOverrides,
    owner: &str,
    agent_id: &str,
) -> u16 {
    let resume = Resume {
        store,
        agentkit: client(endpoint),
        registry: RegistryCache::new(overrides),
        identity: identity(),
        wake: WakeSettings::default(),
        schedules: Default::default(),
        fanout: snapwake::fanout::Fanout::Channel(Default::default()),
    };
    let resp = resume
        .handle(request(
            "POST",
            &format!("/v1/agents/codex/{agent_id}/resume"),
            Who::User(owner),
            None,
        ))
        .await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 200, "{body:#}");
    status
}

/// Whether `owner`'s `GET /v1/agents` lists `agent_id` (the list function, scan path: the
/// snapshot Tools of the registry, legacy ones included).
async fn listed<S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore>(
    store: S,
    endpoint: &str,
    overrides: ToolOverrides,
    owner: &str,
    agent_id: &str,
) -> bool {
    let list = snapwake_list::List::new(
        store,
        client(endpoint),
        RegistryCache::new(overrides),
        identity(),
        snapwake_list::ListSettings {
            lock: snapwake::lock::LockSettings::default(),
            cursor_key: Some("a-cursor-key-of-at-least-32-characters".into()),
            open_url: None,
            prices: None,
        },
    );
    let (status, body) = answer(
        &list
            .handle(request("GET", "/v1/agents", Who::User(owner), None))
            .await,
    );
    assert_eq!(status, 200, "{body:#}");
    body["agents"]
        .as_array()
        .is_some_and(|agents| agents.iter().any(|a| a["agent_id"] == agent_id))
}

fn codex(registry: &ToolRegistry) -> snapwake::domain::KindTools {
    registry.kind(Kind::Codex).cloned().unwrap_or_default()
}

#[tokio::test]
async fn legacy_without_migration_keeps_the_tool_temporary_and_its_snapshots_wakeable() {
    let sim = sim(Duration::ZERO).await;
    let ctl = sim.control();
    let (old, agent) = legacy_tool(&ctl, "alice");
    let store = Arc::new(dynamo_store("deploy_legacy_keep").await);
    let pins = [("CODEX", old.as_str())];
    let f = deploy_fn(store.clone(), &sim.endpoint(), catalogue(&pins));

    let report = run(&f, apply(), Duration::from_secs(60)).await;
    let temp = report.entry("codex").unwrap();
    assert_eq!(temp.status, EntryStatus::Unchanged, "{temp:?}");
    assert_eq!(temp.tool_id.as_deref(), Some(old.as_str()));
    assert!(temp
        .notes
        .iter()
        .any(|n| n.contains("legacy snapshot Tool")));
    let rec = report.entry("codex_snapshot").unwrap();
    assert_eq!(rec.status, EntryStatus::Created);
    assert!(report
        .warnings
        .iter()
        .any(|w| w.contains(&old) && w.contains("SNAPWAKE_TOOL_CODEX")));
    let registry = store.get_registry().await.unwrap().unwrap();
    let tools = codex(&registry);
    assert_eq!(tools.temporary.as_deref(), Some(old.as_str()));
    assert_eq!(tools.recoverable, rec.tool_id);
    assert_eq!(tools.legacy_snapshot_tools, vec![old.clone()]);
    // Never re-purposed: the old Tool still has its snapshots on and nothing was written to it.
    assert_eq!(ctl.tool(&old).unwrap().1.enable_snapshot, Some(true));
    assert_eq!(ctl.counters().received("UpdateTool"), 0);

    // The asleep agent on it stays listed and wakeable.
    let overrides = ToolOverrides([("CODEX".to_string(), old.clone())].into());
    assert!(
        listed(
            store.clone(),
            &sim.endpoint(),
            overrides.clone(),
            "alice",
            &agent
        )
        .await
    );
    wake(
        store.clone(),
        &sim.endpoint(),
        overrides.clone(),
        "alice",
        &agent,
    )
    .await;
    assert!(listed(store.clone(), &sim.endpoint(), overrides, "alice", &agent).await);

    // A second run changes nothing and keeps it listed.
    let again = run(&f, apply(), Duration::from_secs(60)).await;
    assert_eq!(again.count(EntryStatus::Unchanged), 7, "{again:#?}");
    assert!(!again.registry_written);
}

#[tokio::test]
async fn legacy_with_migration_adopts_the_tool_as_recoverable_and_creates_a_temporary_one() {
    let sim = sim(Duration::ZERO).await;
    let ctl = sim.control();
    let (old, agent) = legacy_tool(&ctl, "bob");
    let store = Arc::new(dynamo_store("deploy_legacy_migrate").await);
    let pins = [("CODEX", old.as_str())];
    let f = deploy_fn(store.clone(), &sim.endpoint(), catalogue(&pins));
    let overrides = ToolOverrides([("CODEX".to_string(), old.clone())].into());

    let report = run(
        &f,
        DeployOptions {
            migrate_legacy: true,
            ..DeployOptions::default()
        },
        Duration::from_secs(60),
    )
    .await;
    let rec = report.entry("codex_snapshot").unwrap();
    assert_eq!(rec.status, EntryStatus::Adopted, "{rec:?}");
    assert_eq!(rec.tool_id.as_deref(), Some(old.as_str()));
    assert!(rec
        .notes
        .iter()
        .any(|n| n.contains("adopted as the codex recoverable Tool")));
    let temp = report.entry("codex").unwrap();
    assert_eq!(temp.status, EntryStatus::Created, "{temp:?}");
    assert_ne!(temp.tool_id.as_deref(), Some(old.as_str()));
    assert!(temp.notes.iter().any(|n| n.contains("a new Tool created")));
    assert!(report
        .warnings
        .iter()
        .any(|w| w.contains("SNAPWAKE_TOOL_CODEX_SNAPSHOT")));
    let registry = store.get_registry().await.unwrap().unwrap();
    let tools = codex(&registry);
    assert_eq!(tools.recoverable.as_deref(), Some(old.as_str()));
    assert_eq!(tools.temporary, temp.tool_id);
    assert!(tools.legacy_snapshot_tools.is_empty());
    let (_, new_temp) = ctl.tool(temp.tool_id.as_deref().unwrap()).unwrap();
    assert_eq!(new_temp.enable_snapshot, Some(false));
    assert_eq!(
        ctl.counters().received("CreateTool"),
        6,
        "one new temporary + 5 others"
    );

    assert!(
        listed(
            store.clone(),
            &sim.endpoint(),
            overrides.clone(),
            "bob",
            &agent
        )
        .await
    );
    wake(
        store.clone(),
        &sim.endpoint(),
        overrides.clone(),
        "bob",
        &agent,
    )
    .await;

    // A later run without the flag does not undo the migration, and writes nothing.
    ctl.reset_counters();
    let again = run(&f, apply(), Duration::from_secs(60)).await;
    assert_eq!(again.count(EntryStatus::Unchanged), 7, "{again:#?}");
    assert_eq!(tool_writes(&ctl), 0);
    assert_eq!(
        codex(&store.get_registry().await.unwrap().unwrap())
            .recoverable
            .as_deref(),
        Some(old.as_str())
    );
    let another = asleep_on(&ctl, &old, "bob");
    assert!(
        listed(
            store.clone(),
            &sim.endpoint(),
            overrides.clone(),
            "bob",
            &another
        )
        .await
    );
    wake(store.clone(), &sim.endpoint(), overrides, "bob", &another).await;
}

#[tokio::test]
async fn a_former_recoverable_tool_stays_listed_until_its_snapshots_are_gone() {
    let sim = sim(Duration::ZERO).await;
    let ctl = sim.control();
    let (old, agent) = legacy_tool(&ctl, "carol");
    let store = Arc::new(dynamo_store("deploy_legacy_drain").await);
    // First the old Tool is pinned as the recoverable one...
    let f = deploy_fn(
        store.clone(),
        &sim.endpoint(),
        catalogue(&[("CODEX_SNAPSHOT", old.as_str())]),
    );
    run(&f, apply(), Duration::from_secs(60)).await;
    assert_eq!(
        codex(&store.get_registry().await.unwrap().unwrap())
            .recoverable
            .as_deref(),
        Some(old.as_str())
    );
    // ...then the pin is dropped: a new recoverable Tool by name, the old one kept as legacy
    // while it holds a snapshot.
    let f = deploy_fn(store.clone(), &sim.endpoint(), catalogue(&[]));
    let report = run(&f, apply(), Duration::from_secs(60)).await;
    let tools = codex(&store.get_registry().await.unwrap().unwrap());
    assert_ne!(tools.recoverable.as_deref(), Some(old.as_str()));
    assert_eq!(
        tools.legacy_snapshot_tools,
        vec![old.clone()],
        "{report:#?}"
    );
    wake(
        store.clone(),
        &sim.endpoint(),
        ToolOverrides::default(),
        "carol",
        &agent,
    )
    .await;

    // Once its snapshots are gone (deleted by hand here), it leaves the registry.
    let snapshot = ctl
        .snapshots()
        .into_iter()
        .find(|s| s.tool_id.as_deref() == Some(old.as_str()))
        .unwrap();
    client(&sim.endpoint())
        .call(
            REGION,
            &snapwake::agentkit::types::DeleteSessionSnapshot {
                tool_id: old.clone(),
                snapshot_id: snapshot.snapshot_id.unwrap(),
            },
            Deadline::after(Duration::from_secs(5)),
        )
        .await
        .unwrap();
    let report = run(&f, apply(), Duration::from_secs(60)).await;
    assert!(report
        .warnings
        .iter()
        .any(|w| w.contains("no snapshot left")));
    let tools = codex(&store.get_registry().await.unwrap().unwrap());
    assert!(tools.legacy_snapshot_tools.is_empty());
}
