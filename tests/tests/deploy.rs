//! The deploy reconciler and function end to end: the simulator with its 3-per-second tool
//! write throttle ON, the registry and the deploy lock on DynamoDB Local.

use std::sync::Arc;
use std::time::{Duration, Instant};

use snapwake::agentkit::types::{MetadataEntry, UpdateTool};
use snapwake::agentkit::{AgentKit, AgentKitClient};
use snapwake::deadline::Deadline;
use snapwake::deploy::catalogue::tool_name;
use snapwake::deploy::plan::find_by_name;
use snapwake::deploy::{
    no_retry_policy, Catalogue, DeployOptions, DeploySettings, EntryStatus, Report, RunOutcome,
    WriteLimiter,
};
use snapwake::domain::{Kind, Retention, ToolRegistry};
use snapwake::identity::usid;
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::AgentStore;
use snapwake::wake::WakeSettings;
use snapwake_deploy::Deploy;
use snapwake_resume::Resume;
use snapwake_sim::{SeedSnapshot, SeedTool, SimConfig, SimControl, Simulator};
use snapwake_tests::*;

const APP: &str = "Acme Studio";

/// Quick polling for tests; everything else as in production.
fn settings() -> DeploySettings {
    DeploySettings {
        poll_interval: Duration::from_millis(100),
        finish_margin: Duration::from_millis(300),
        ..DeploySettings::default()
    }
}

fn catalogue(overrides: &[(&str, &str)]) -> Catalogue {
    let mut c = Catalogue::default_for(Some(APP));
    let map = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    c.apply_overrides(&ToolOverrides(map));
    c
}

fn deploy_fn<S: AgentStore>(
    store: S,
    endpoint: &str,
    catalogue: Catalogue,
) -> Deploy<S, AgentKitClient> {
    Deploy {
        store,
        agentkit: client(endpoint),
        writer: client(endpoint).with_retry_policy(no_retry_policy()),
        catalogue,
        settings: settings(),
    }
}

async fn run<S: AgentStore>(
    f: &Deploy<S, AgentKitClient>,
    options: DeployOptions,
    budget: Duration,
) -> Report {
    f.run(options, Deadline::after(budget)).await.unwrap()
}

fn apply() -> DeployOptions {
    DeployOptions::default()
}

fn tool_writes(ctl: &SimControl) -> u64 {
    let c = ctl.counters();
    c.received("CreateTool") + c.received("UpdateTool")
}

/// Every catalogue name matches exactly one Tool.
async fn assert_one_tool_per_name(endpoint: &str, catalogue: &Catalogue) {
    let c = client(endpoint);
    for e in &catalogue.entries {
        let found = find_by_name(&c, REGION, &e.name, Deadline::after(Duration::from_secs(5)))
            .await
            .unwrap();
        assert_eq!(found.len(), 1, "{} Tools named {}", found.len(), e.name);
    }
}

async fn sim(tool_ready_delay: Duration) -> snapwake_sim::RunningSim {
    Simulator::start(SimConfig {
        tool_ready_delay,
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

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
    let deadline_ms = snapwake::timestamp::now_ms() + 30_000;
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
    let deadline_ms = snapwake::timestamp::now_ms() + 60_000;
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
        .seed_tool(
            REGION,
            SeedTool {
                name: name.clone(),
                tool_type: "CodeEnv".into(),
                enable_snapshot: true,
                ..SeedTool::default()
            },
        )
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

#[tokio::test]
async fn the_limiter_keeps_concurrent_writes_within_the_throttle() {
    let sim = sim(Duration::ZERO).await;
    let ctl = sim.control();
    let tool = ctl
        .seed_tool(
            REGION,
            SeedTool {
                name: "target".into(),
                tool_type: "CodeEnv".into(),
                ..SeedTool::default()
            },
        )
        .unwrap();
    let writer = Arc::new(client(&sim.endpoint()).with_retry_policy(no_retry_policy()));
    let update = UpdateTool {
        tool_id: tool.clone(),
        enable_snapshot: Some(true),
        envs: None,
    };

    // Without the limiter, the simulator's throttle does catch a burst.
    let burst: Vec<_> = (0..6)
        .map(|_| {
            let (w, u) = (writer.clone(), update.clone());
            tokio::spawn(async move {
                w.call(REGION, &u, Deadline::after(Duration::from_secs(5)))
                    .await
            })
        })
        .collect();
    for t in burst {
        let _ = t.await.unwrap();
    }
    assert!(ctl.counters().throttled > 0, "the throttle is live");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ctl.reset_counters();

    // Through the limiter: 10 concurrent writes, none throttled, ≤ 3 in any second.
    let limiter = Arc::new(WriteLimiter::default());
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (w, u, l) = (writer.clone(), update.clone(), limiter.clone());
            tokio::spawn(async move {
                l.write(&*w, REGION, &u, Deadline::after(Duration::from_secs(30)))
                    .await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let c = ctl.counters();
    assert_eq!(c.succeeded("UpdateTool"), 10);
    assert_eq!(c.throttled, 0);
    assert!(c.max_tool_writes_per_second <= 3, "{c:?}");
    assert_eq!(limiter.writes(), 10);
    assert_eq!(limiter.throttles(), 0);
}

// ---------------------------------------------------------------------------------------------
// Legacy single-Tool deployments

/// A legacy codex Tool (snapshots switched on by hand) with one asleep agent of `owner`.
fn legacy_tool(ctl: &SimControl, owner: &str) -> (String, String) {
    let tool = ctl
        .seed_tool(
            REGION,
            SeedTool {
                name: "studio-codex".into(),
                tool_type: "CodeEnv".into(),
                enable_snapshot: true,
                ..SeedTool::default()
            },
        )
        .unwrap();
    let agent = asleep_on(ctl, &tool, owner);
    (tool, agent)
}

fn asleep_on(ctl: &SimControl, tool: &str, owner: &str) -> String {
    let agent_id = usid::mint(owner);
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
async fn wake<S: AgentStore>(
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
async fn listed<S: AgentStore>(
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

#[tokio::test]
async fn a_429_from_agentkit_waits_and_retries_in_a_fresh_slot() {
    let sim = sim(Duration::ZERO).await;
    let ctl = sim.control();
    // Someone else's writes exhaust the quota: the next two CreateTool calls answer 429.
    let mut fault = snapwake_sim::Fault::error(Some("CreateTool"), "Throttling", 429);
    if let Some(e) = fault.error.as_mut() {
        e.retry_after = Some(1);
    }
    fault.trigger = snapwake_sim::Trigger::Next(2);
    ctl.inject(fault).unwrap();
    let store = dynamo_store("deploy_429").await;
    let cat = catalogue(&[]);
    let f = deploy_fn(store, &sim.endpoint(), cat.clone());
    let report = run(&f, apply(), Duration::from_secs(60)).await;
    assert_eq!(report.count(EntryStatus::Created), 7, "{report:#?}");
    assert_eq!(report.throttles, 2);
    assert_eq!(report.writes, 7);
    let c = ctl.counters();
    assert_eq!(c.received("CreateTool"), 9);
    assert!(c.max_tool_writes_per_second <= 3, "{c:?}");
    assert_one_tool_per_name(&sim.endpoint(), &cat).await;
}
