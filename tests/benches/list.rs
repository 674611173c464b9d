//! List benchmark on DynamoDB Local and the simulated AgentKit (docs/architecture.md, "Quality bars
//! and where they are checked"): one owner's `GET /v1/agents` in a deployment of 20,000 snapshots
//! of 1,000 owners, every AgentKit call 5 ms slower (a simulator latency fault), on
//!
//! (a) the scan path — before the owner index is synced, the reference Studio's full scan of
//!     every snapshot page;
//! (b) the owner-index path — after the retention sweep indexed everyone: the owner's index
//!     queries and the records' snapshot summaries, and one Username-filtered listing per Tool
//!     (nothing per agent).
//!
//! Both in the same run: median latency, DynamoDB and AgentKit calls per list, the ratio.
//! Between the two, the retention sweep that makes the index trusted is measured itself: its
//! first pass over the 20,000 snapshots (indexing every agent, pruning to 3 snapshots each) and
//! a second one (nothing left to do). Then the minute refresh over the same deployment: its
//! first read, a quiet minute, and a snapshot made outside snapwake until it is listed.
//!
//! Then an admin's pages of everyone (`owner=*`), in a deployment of 2,000 snapshots of 100
//! owners: every page, its AgentKit and DynamoDB calls and latency.
//!
//! Run by `scripts/bench.sh`, which starts DynamoDB Local; prints Markdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::AgentKitClient;
use snapwake::deadline::Deadline;
use snapwake::identity::usid;
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::AgentStore;
use snapwake_list::{List, ListSettings};
use snapwake_sim::{Fault, SeedSnapshot};
use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;

const OWNERS: usize = 1000;
const MY_AGENTS: usize = 10;
const LATENCY_MS: u64 = 5;
const SCAN_RUNS: usize = 5;
const INDEX_RUNS: usize = 20;
/// The codex Tools of [`World`]: one recoverable, one temporary.
const TOOLS: u64 = 2;

/// What one measured path cost.
struct PathCost {
    median: Duration,
    min: Duration,
    max: Duration,
    dynamo: (u64, u64),
    agentkit: (u64, u64),
    snapshot_pages: (u64, u64),
    agents: usize,
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn range((lo, hi): (u64, u64)) -> String {
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    }
}

fn min_max(v: &[u64]) -> (u64, u64) {
    (
        v.iter().copied().min().unwrap_or(0),
        v.iter().copied().max().unwrap_or(0),
    )
}

/// `runs` lists of `owner`'s agents, each counted on its own.
async fn measure<S: AgentStore>(
    f: &List<Arc<CountingStore<S>>, AgentKitClient>,
    store: &CountingStore<S>,
    world: &World,
    owner: &str,
    runs: usize,
) -> PathCost {
    let ctl = world.sim.control();
    let (mut took, mut dynamo, mut agentkit, mut pages) = (vec![], vec![], vec![], vec![]);
    let mut agents = 0;
    for _ in 0..runs {
        ctl.reset_counters();
        let before = store.calls.total();
        let started = Instant::now();
        let (status, body) = answer(
            &f.handle(request_query("GET", "/v1/agents", &[], Who::User(owner)))
                .await,
        );
        took.push(started.elapsed());
        assert_eq!(status, 200, "{body}");
        agents = body["agents"].as_array().map_or(0, Vec::len);
        dynamo.push(store.calls.total() - before);
        let counters = ctl.counters();
        agentkit.push(counters.actions.values().map(|a| a.received).sum());
        pages.push(counters.received("ListSessionSnapshots"));
    }
    took.sort();
    PathCost {
        median: took[took.len() / 2],
        min: took[0],
        max: took[took.len() - 1],
        dynamo: min_max(&dynamo),
        agentkit: min_max(&agentkit),
        snapshot_pages: min_max(&pages),
        agents,
    }
}

async fn bench() {
    let store = Arc::new(CountingStore::new(dynamo_store("bench-list").await));
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    // The measured owner: 10 agents of 2 snapshots; 999 others: 2 agents of 10 snapshots.
    let me = "owner-0000";
    let mut seeds = Vec::new();
    for o in 0..OWNERS {
        let owner = format!("owner-{o:04}");
        let (agents, per_agent) = if o == 0 { (MY_AGENTS, 2) } else { (2, 10) };
        for _ in 0..agents {
            let id = usid::mint(&owner);
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
    let snapshots = seeds.len();
    let ctl = world.sim.control();
    ctl.seed_snapshots(seeds).expect("seed snapshots");
    let f = List::new(
        store.clone(),
        world.client(),
        RegistryCache::new(ToolOverrides::default()),
        identity(),
        ListSettings {
            lock: snapwake::lock::LockSettings::default(),
            cursor_key: None,
        },
    );
    let latency = || Fault::latency(None, LATENCY_MS);

    // (a) Before the sync: the scan. One unmeasured list first warms the registry cache and
    // the cursor key, as a warm container would have them.
    ctl.inject(latency()).expect("latency fault");
    measure(&f, &store, &world, me, 1).await;
    let scan = measure(&f, &store, &world, me, SCAN_RUNS).await;

    // The sweep (no latency fault: its cost is counted in calls, and timed as it is).
    ctl.clear_faults();
    let first = sweep(&store, &world).await;
    let second = sweep(&store, &world).await;

    // (b) After it: the owner index. The first list reads the sync's completion once.
    ctl.inject(latency()).expect("latency fault");
    measure(&f, &store, &world, me, 1).await;
    let index = measure(&f, &store, &world, me, INDEX_RUNS).await;
    assert_eq!(scan.agents, MY_AGENTS);
    assert_eq!(index.agents, MY_AGENTS);

    let ratio = scan.median.as_secs_f64() / index.median.as_secs_f64();
    println!("## List one owner among {snapshots} snapshots of {OWNERS} owners\n");
    println!(
        "`GET /v1/agents` of one owner with {MY_AGENTS} agents through the list handler; DynamoDB \
         Local, simulated AgentKit over loopback HTTP with {LATENCY_MS} ms added to every call \
         (a simulator latency fault). Scan: before the owner index is synced ({SCAN_RUNS} runs). \
         Index: after the retention sweep indexed it ({INDEX_RUNS} runs). Both after one warm-up list.\n"
    );
    println!("| measure | scan path | owner-index path | budget (index) |");
    println!("|---|---|---|---|");
    println!(
        "| latency median | {} | {} | |",
        ms(scan.median),
        ms(index.median)
    );
    println!(
        "| latency min–max | {}–{} | {}–{} | |",
        ms(scan.min),
        ms(scan.max),
        ms(index.min),
        ms(index.max)
    );
    println!(
        "| DynamoDB calls per list | {} | {} | ≤ 3 |",
        range(scan.dynamo),
        range(index.dynamo)
    );
    println!(
        "| AgentKit calls per list | {} | {} | ≤ 1 per Tool = {TOOLS} |",
        range(scan.agentkit),
        range(index.agentkit),
    );
    println!(
        "| of which ListSessionSnapshots | {} | {} | |",
        range(scan.snapshot_pages),
        range(index.snapshot_pages)
    );
    println!("| agents listed | {} | {} | |", scan.agents, index.agents);
    println!("| latency ratio scan / index | {ratio:.1}× | | |");
    println!();
    println!(
        "The owner index turns a walk over every snapshot page of the deployment into one \
         query per owner key and one listing per Tool (the snapshots come from the records' \
         summaries, kept fresh by the minute refresh), so the list costs {} AgentKit calls \
         instead of {} and is {ratio:.0}× faster at {LATENCY_MS} ms per call.",
        range(index.agentkit),
        range(scan.agentkit)
    );
    println!();
    print_sweeps(snapshots, &first, &second);
    ctl.clear_faults();
    refresh(&store, &world, &f, snapshots).await;
}

/// What one sweep run cost.
struct SweepCost {
    report: snapwake_delete::SweepReport,
    took: Duration,
    agentkit: Vec<(String, u64)>,
    dynamo: u64,
}

async fn sweep<S: AgentStore>(store: &Arc<CountingStore<S>>, world: &World) -> SweepCost {
    let ctl = world.sim.control();
    ctl.reset_counters();
    let before = store.calls.total();
    let delete = snapwake_delete::Delete {
        store: store.clone(),
        agentkit: world.client(),
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        settings: snapwake_delete::DeleteSettings::default(),
    };
    let started = Instant::now();
    let report = delete
        .sweep(
            Deadline::after(Duration::from_secs(900)),
            false,
            &snapwake_delete::Quiet,
        )
        .await
        .expect("sweep");
    let took = started.elapsed();
    assert!(report.completed && report.counts.errors == 0, "{report:?}");
    let agentkit = ctl
        .counters()
        .actions
        .into_iter()
        .map(|(a, c)| (a, c.received))
        .filter(|(_, n)| *n > 0)
        .collect();
    SweepCost {
        report,
        took,
        agentkit,
        dynamo: store.calls.total() - before,
    }
}

fn print_sweeps(snapshots: usize, first: &SweepCost, second: &SweepCost) {
    println!(
        "## The retention sweep over {snapshots} snapshots of {OWNERS} owners
"
    );
    println!(
        "The delete function's sweep (`Delete::sweep`, what the hourly schedule and `snapwake sweep` run) over the same deployment, on DynamoDB Local and the simulated AgentKit without added latency: the first pass indexes every agent and prunes each to its newest 3 snapshots (the 999 other owners' agents have 10), the second finds nothing to do.\n"
    );
    println!("| measure | first pass | second pass |\n|---|---|---|");
    let row = |name: &str, a: String, b: String| println!("| {name} | {a} | {b} |");
    row("wall time", ms(first.took), ms(second.took));
    row(
        "agents seen",
        first.report.counts.seen.to_string(),
        second.report.counts.seen.to_string(),
    );
    row(
        "records written (indexed)",
        first.report.counts.indexed.to_string(),
        second.report.counts.indexed.to_string(),
    );
    row(
        "snapshots pruned",
        first.report.counts.pruned.to_string(),
        second.report.counts.pruned.to_string(),
    );
    let total = |c: &SweepCost| c.agentkit.iter().map(|(_, n)| n).sum::<u64>();
    row(
        "AgentKit calls in all",
        total(first).to_string(),
        total(second).to_string(),
    );
    let mut actions: Vec<&String> = first
        .agentkit
        .iter()
        .chain(&second.agentkit)
        .map(|(a, _)| a)
        .collect();
    actions.sort();
    actions.dedup();
    for action in actions {
        let of = |c: &SweepCost| {
            c.agentkit
                .iter()
                .find(|(a, _)| a == action)
                .map_or(0, |(_, n)| *n)
        };
        row(
            &format!("— of which {action}"),
            of(first).to_string(),
            of(second).to_string(),
        );
    }
    row(
        "DynamoDB calls in all",
        first.dynamo.to_string(),
        second.dynamo.to_string(),
    );
    println!();
}

/// The minute refresh over the deployment the sweep indexed: its first read (every snapshot
/// page of the Tool once), quiet minutes, and a snapshot another system made, timed from its
/// making to the first list that shows it (with the schedule's minute added: the refresh runs
/// once a minute).
async fn refresh<S: AgentStore>(
    store: &Arc<CountingStore<S>>,
    world: &World,
    list: &List<Arc<CountingStore<S>>, AgentKitClient>,
    snapshots: usize,
) {
    let ctl = world.sim.control();
    let delete = snapwake_delete::Delete {
        store: store.clone(),
        agentkit: world.client(),
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        settings: snapwake_delete::DeleteSettings::default(),
    };
    let run = || async {
        ctl.reset_counters();
        let before = store.calls.total();
        let started = Instant::now();
        let report = delete
            .refresh(Deadline::after(Duration::from_secs(55)))
            .await
            .expect("refresh");
        assert_eq!(report.errors, 0, "{report:?}");
        let calls: u64 = ctl.counters().actions.values().map(|a| a.received).sum();
        (started.elapsed(), calls, store.calls.total() - before, report)
    };
    let first = run().await;
    let mut quiet = Vec::new();
    for _ in 0..5 {
        // A minute apart, as scheduled (a second is enough for the records to be older).
        tokio::time::sleep(Duration::from_millis(1100)).await;
        quiet.push(run().await);
    }
    quiet.sort_by_key(|q| q.0);
    let median = &quiet[quiet.len() / 2];

    // Another system makes a snapshot of a new agent of the measured owner.
    let me = "owner-0000";
    let outside = usid::mint(me);
    let made = Instant::now();
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: world.recoverable.clone(),
        user_session_id: Some(outside.clone()),
        session_metadata: vec![MetadataEntry::string("Username", me)],
        ..SeedSnapshot::default()
    })
    .expect("seed");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let new = run().await;
    let resp = list
        .handle(request("GET", "/v1/agents", Who::User(me), None))
        .await;
    let (status, body) = answer(&resp);
    let listed = status == 200
        && body["agents"]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v["agent_id"] == outside.as_str()));
    let to_listed = made.elapsed();
    assert!(listed, "the new agent is listed after the refresh: {body}");

    println!("## The minute refresh over {snapshots} snapshots\n");
    println!(
        "`{{\"action\": \"refresh\"}}` (every minute) after the sweep above indexed the deployment: \
         the first refresh reads the snapshot Tool whole once; later ones read only what was \
         created after the mark (`CreateTimeAfter`, five minutes of overlap). DynamoDB Local, \
         simulated AgentKit without added latency; quiet: the median of 5 runs.\n"
    );
    println!("| measure | first refresh | quiet minute | one new snapshot made elsewhere |");
    println!("|---|---|---|---|");
    println!(
        "| wall time | {} | {} | {} |",
        ms(first.0),
        ms(median.0),
        ms(new.0)
    );
    println!(
        "| AgentKit calls (snapshot Tools: 1) | {} | {} | {} |",
        first.1, median.1, new.1
    );
    println!(
        "| snapshots listed | {} | {} | {} |",
        first.3.listed, median.3.listed, new.3.listed
    );
    println!(
        "| records written | {} | {} | {} |",
        first.3.indexed, median.3.indexed, new.3.indexed
    );
    println!(
        "| DynamoDB calls | {} | {} | {} |",
        first.2, median.2, new.2
    );
    println!();
    println!(
        "A snapshot made outside snapwake was listed {} after it was made, refreshing at once; \
         on the deployed schedule that is at most a minute more: {} in the worst case, within \
         the two minutes the index promises.",
        ms(to_listed),
        ms(to_listed + Duration::from_secs(60))
    );
    println!();
}

/// An admin's pages of everyone over 2,000 snapshots of 100 owners (10 agents of 2 snapshots
/// each): every page of `limit` agents, read from the index.
async fn everyone() {
    const OWNERS_HERE: usize = 100;
    const AGENTS_EACH: usize = 10;
    let store = Arc::new(CountingStore::new(dynamo_store("bench-everyone").await));
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let mut seeds = Vec::new();
    for o in 0..OWNERS_HERE {
        let owner = format!("owner-{o:03}");
        for _ in 0..AGENTS_EACH {
            let id = usid::mint(&owner);
            for _ in 0..2 {
                seeds.push(SeedSnapshot {
                    tool_id: world.recoverable.clone(),
                    user_session_id: Some(id.clone()),
                    session_metadata: vec![MetadataEntry::string("Username", &owner)],
                    ..SeedSnapshot::default()
                });
            }
        }
    }
    let snapshots = seeds.len();
    let ctl = world.sim.control();
    ctl.seed_snapshots(seeds).expect("seed snapshots");
    sweep(&store, &world).await;
    let f = List::new(
        store.clone(),
        world.client(),
        RegistryCache::new(ToolOverrides::default()),
        identity(),
        ListSettings {
            lock: snapwake::lock::LockSettings::default(),
            cursor_key: None,
        },
    );
    ctl.inject(Fault::latency(None, LATENCY_MS))
        .expect("latency fault");
    println!(
        "## Listing everyone: `owner=*`, every page, over {snapshots} snapshots of {OWNERS_HERE} owners\n"
    );
    println!(
        "An admin pages through every agent ({} of them) with the list handler; the pages are read from the index the sweep and snapwake's own writes keep current. DynamoDB Local, simulated AgentKit with {LATENCY_MS} ms per call (no call is made). Before this rework, the same listing read AgentKit page by page and looked every agent up: 4,438 AgentKit calls in all, and a `limit=50` page held 30 agents; the reference Studio lists everyone in 23 calls.\n",
        OWNERS_HERE * AGENTS_EACH
    );
    println!("| limit | pages | agents (distinct) | AgentKit calls in all | DynamoDB calls per page | latency per page (median) | full pages |");
    println!("|---|---|---|---|---|---|---|");
    for limit in ["50", "100"] {
        ctl.reset_counters();
        let before = store.calls.total();
        let mut cursor: Option<String> = None;
        let mut took = Vec::new();
        let mut sizes = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        loop {
            let mut q = vec![("owner", "*"), ("limit", limit)];
            if let Some(c) = cursor.as_deref() {
                q.push(("cursor", c));
            }
            let started = Instant::now();
            let (status, page) = answer(
                &f.handle(request_query("GET", "/v1/agents", &q, Who::Admin("root")))
                    .await,
            );
            took.push(started.elapsed());
            assert_eq!(status, 200, "{page}");
            let agents = page["agents"].as_array().expect("agents");
            sizes.push(agents.len());
            for a in agents {
                seen.insert(a["agent_id"].as_str().unwrap_or_default().to_string());
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        let calls: u64 = ctl.counters().actions.values().map(|a| a.received).sum();
        let dynamo = store.calls.total() - before;
        took.sort();
        let full = sizes[..sizes.len() - 1]
            .iter()
            .all(|n| n.to_string() == limit);
        println!(
            "| {limit} | {} | {} | {calls} | {:.1} | {} | {} |",
            sizes.len(),
            seen.len(),
            dynamo as f64 / sizes.len() as f64,
            ms(took[took.len() / 2]),
            if full { "all but the last" } else { "NOT ALL" }
        );
    }
    println!();
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        bench().await;
        everyone().await;
    });
}
