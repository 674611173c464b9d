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

mod everyone;
mod fleet;
mod refresh;
mod sweep;

use everyone::everyone;
use fleet::*;
use refresh::refresh;
use sweep::{print_sweeps, sweep};

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

/// `runs` lists of `owner`'s agents, each counted on its own.
async fn measure<S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore>(
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
    let world = World::registered(Duration::ZERO, &store).await;
    // The measured owner: 10 agents of 2 snapshots; 999 others: 2 agents of 10 snapshots.
    let me = "owner-0000";
    let mut seeds = Vec::new();
    for o in 0..OWNERS {
        let owner = format!("owner-{o:04}");
        let (agents, per_agent) = if o == 0 { (MY_AGENTS, 2) } else { (2, 10) };
        for _ in 0..agents {
            let id = caller::mint(&owner);
            for _ in 0..per_agent {
                seeds.push(yesterdays_snapshot(&world, &owner, &id));
            }
        }
    }
    let snapshots = seeds.len();
    let ctl = world.sim.control();
    ctl.seed_snapshots(seeds).expect("seed snapshots");
    let f = list_fn(store.clone(), world.client(), ListSettings::default());
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
        "| DynamoDB calls per list | {} | {} | ≤ 2 |",
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

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let rt = multi_thread_runtime(4);
    rt.block_on(async {
        bench().await;
        everyone().await;
    });
}
