//! The sweep and the refresh as the snapshots pile up (docs/operations.md, "At a million
//! snapshots"): a deployment at rest — every agent with the 3 snapshots retention keeps,
//! indexed — in which one agent in eight has just gone to sleep (a new snapshot made in the
//! last minute, so one old snapshot to prune). On DynamoDB Local and the simulated AgentKit
//! with AgentKit's assumed account-wide limits on (docs/agentkit.md: session writes 20/s,
//! reads 50/s) and 200 ms added to every call; every call through the deployment's budget,
//! in its background lane.
//!
//! Measured, per size: the refresh that sees the new snapshots (the minute after), the hourly
//! pass (listing, then indexing and pruning every agent), and a quiet refresh after it: wall
//! time, AgentKit calls by action, requests AgentKit refused (429), DynamoDB calls. Then the
//! curve: a least-squares line through the sizes, extrapolated to 1,000,000 snapshots, and the
//! least time AgentKit's budget allows for the calls a pass at that size makes.
//!
//! `SNAPWAKE_BENCH_SWEEP` sets the sizes (default `10000,30000,100000`);
//! `SNAPWAKE_BENCH_SWEEP_BEFORE` the size also swept one agent and one page at a time, as
//! before the sweep went side by side (default `10000`; empty: none);
//! `SNAPWAKE_BENCH_SWEEP_NEW_ONE_IN` how many agents per new snapshot (default 8; 1 gives, on a
//! Tool of 160,000, the burst a million snapshots make); `SNAPWAKE_BENCH_SWEEP_PASS=0`
//! measures the refreshes alone (the burst's, then the minute after with no pass between: for
//! a burst whose pass would take an hour). Run by `scripts/bench.sh`, which starts DynamoDB
//! Local; prints Markdown.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snapwake::agentkit::types::MetadataEntry;
use snapwake::budget::{AgentKitBudget, BudgetSettings};
use snapwake::domain::Trigger;
use snapwake::identity::caller;
use snapwake::index_sync::SliceSettings;
use snapwake::invocation::Deadline;
use snapwake::invocation::Invocation;
use snapwake::store::dynamo::DynamoStore;
use snapwake_delete::{DeleteSettings, RefreshReport, SweepProgress, SweepReport, SweepSettings};
use snapwake_sim::{Fault, RateLimits, SeedSnapshot, SimConfig};
use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;
use time::OffsetDateTime;

/// Added to every AgentKit call.
const LATENCY_MS: u64 = 200;
/// Snapshots retention keeps per agent.
const KEEP: usize = 3;
/// One agent in this many has just gone to sleep (`SNAPWAKE_BENCH_SWEEP_NEW_ONE_IN`).
const NEW_ONE_IN: usize = 8;

fn new_one_in() -> usize {
    std::env::var("SNAPWAKE_BENCH_SWEEP_NEW_ONE_IN")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(NEW_ONE_IN)
}
/// One invocation of the delete function.
const INVOCATION: Duration = Duration::from_secs(900);
/// Snapshots seeded per control call.
const SEED_CHUNK: usize = 10_000;

type Store = Arc<CountingStore<DynamoStore>>;

/// When the listing of the pass ended (the progress hears of the Tool's agents then).
#[derive(Default)]
struct Phases {
    started: Mutex<Option<Instant>>,
    listed: Mutex<Vec<Duration>>,
}

impl SweepProgress for Phases {
    fn tool(&self, _tool_id: &str, agents: usize) {
        if agents > 0 {
            if let Some(started) = *self.started.lock().unwrap() {
                self.listed.lock().unwrap().push(started.elapsed());
            }
        }
    }
}

/// What one measured step cost.
#[derive(Clone, Debug, Default)]
struct Cost {
    took: Duration,
    agentkit: BTreeMap<String, u64>,
    refused: u64,
    dynamo: u64,
}

impl Cost {
    fn calls(&self) -> u64 {
        self.agentkit.values().sum()
    }
}

/// One size's results.
struct Row {
    snapshots: usize,
    agents: usize,
    concurrency: usize,
    burst: (Cost, RefreshReport),
    /// `None`: not measured (`SNAPWAKE_BENCH_SWEEP_PASS=0`).
    pass: Option<(Cost, SweepReport, Duration, usize)>,
    quiet: Option<(Cost, RefreshReport)>,
}

fn seed(agent_id: &str, owner: &str, tool: &str, at: OffsetDateTime) -> SeedSnapshot {
    SeedSnapshot {
        tool_id: tool.to_string(),
        user_session_id: Some(agent_id.to_string()),
        session_metadata: vec![MetadataEntry::string("Username", owner)],
        created_at: Some(at),
        ..SeedSnapshot::default()
    }
}

async fn measured<T>(
    world: &World,
    store: &Store,
    step: impl std::future::Future<Output = T>,
) -> (Cost, T) {
    let ctl = world.sim.control();
    ctl.reset_counters();
    let before = store.calls.total();
    let started = Instant::now();
    let out = step.await;
    let took = started.elapsed();
    let counters = ctl.counters();
    let agentkit = counters
        .actions
        .iter()
        .filter(|(_, c)| c.received > 0)
        .map(|(a, c)| (a.clone(), c.received))
        .collect();
    let cost = Cost {
        took,
        agentkit,
        refused: counters.throttled,
        dynamo: store.calls.total() - before,
    };
    (cost, out)
}

async fn run(snapshots: usize, concurrency: usize) -> Row {
    let agents = snapshots * new_one_in() / (KEEP * new_one_in() + 1);
    let store: Store = Arc::new(CountingStore::new(
        dynamo_store(&format!("bench-sweep-{snapshots}-{concurrency}")).await,
    ));
    let limits = RateLimits::agentkit();
    let world = World::start_with(SimConfig {
        rate_limits: limits.clone(),
        ..SimConfig::default()
    })
    .await;
    world.register(&store).await;
    let ctl = world.sim.control();

    // At rest: KEEP snapshots each, days old, of 100 owners.
    let now = OffsetDateTime::now_utc();
    let ids: Vec<(String, String)> = (0..agents)
        .map(|i| {
            let owner = format!("owner-{:03}", i % 100);
            (caller::mint(&owner), owner)
        })
        .collect();
    let mut seeds = Vec::new();
    for (i, (id, owner)) in ids.iter().enumerate() {
        for k in 0..KEEP {
            let age = Duration::from_secs(86_400 * (k as u64 + 1) + 7 * i as u64 % 86_400);
            seeds.push(seed(id, owner, &world.recoverable, now - age));
        }
    }
    for chunk in seeds.chunks(SEED_CHUNK) {
        ctl.seed_snapshots(chunk.to_vec()).expect("seed");
    }

    let slices = SliceSettings {
        concurrency: concurrency.min(8),
        ..SliceSettings::default()
    };
    let settings = DeleteSettings {
        sweep: SweepSettings {
            concurrency,
            slices,
            ..SweepSettings::default()
        },
        ..DeleteSettings::default()
    };
    // The index as a deployment at rest has it, and the refresh's mark: unmeasured, fast.
    let setup = delete_fn(store.clone(), world.client(), settings.clone());
    let report = setup
        .sweep(
            Deadline::after(INVOCATION * 4),
            false,
            &snapwake_delete::Quiet,
        )
        .await
        .expect("setup sweep");
    assert!(report.completed && report.counts.errors == 0, "{report:?}");
    let report = setup
        .refresh(Deadline::after(INVOCATION))
        .await
        .expect("setup refresh");
    assert_eq!(report.errors, 0, "{report:?}");

    // One agent in eight has just gone to sleep: a snapshot from the last minute, spread over
    // its seconds (a team's sessions expiring together).
    let now = OffsetDateTime::now_utc();
    let new: Vec<SeedSnapshot> = ids
        .iter()
        .step_by(new_one_in())
        .enumerate()
        .map(|(i, (id, owner))| {
            let ago = Duration::from_secs(1 + i as u64 % 60);
            seed(id, owner, &world.recoverable, now - ago)
        })
        .collect();
    for chunk in new.chunks(SEED_CHUNK) {
        ctl.seed_snapshots(chunk.to_vec()).expect("seed");
    }
    let total = agents * KEEP + new.len();

    // From here, as deployed: 200 ms a call, the budget in the table, the background lane.
    ctl.inject(Fault::latency(None, LATENCY_MS)).unwrap();
    let budget = AgentKitBudget::new(
        store.clone(),
        BudgetSettings {
            limits,
            ..BudgetSettings::default()
        },
    );
    let f = delete_fn(
        store.clone(),
        world.client().with_budget(Arc::new(budget)),
        settings,
    );
    // A refresh a second after the last, measured.
    let quiet_refresh = || {
        measured(
            &world,
            &store,
            Invocation::background(snapwake_delete::FUNCTION, Trigger::Sweep).run(async {
                tokio::time::sleep(Duration::from_millis(1100)).await;
                f.refresh(Deadline::after(INVOCATION))
                    .await
                    .expect("refresh")
            }),
        )
    };
    let burst = measured(
        &world,
        &store,
        Invocation::background(snapwake_delete::FUNCTION, Trigger::Sweep).run(async {
            f.refresh(Deadline::after(INVOCATION))
                .await
                .expect("refresh")
        }),
    )
    .await;
    if std::env::var("SNAPWAKE_BENCH_SWEEP_PASS").as_deref() == Ok("0") {
        // The minute after, with no pass between: the burst is still inside the overlap.
        let quiet = quiet_refresh().await;
        return Row {
            snapshots: total,
            agents,
            concurrency,
            burst,
            pass: None,
            quiet: Some(quiet),
        };
    }

    // The pass, in invocations of 15 minutes until it completes.
    let phases = Phases::default();
    let (cost, (report, runs)) = measured(
        &world,
        &store,
        Invocation::background(snapwake_delete::FUNCTION, Trigger::Sweep).run(async {
            *phases.started.lock().unwrap() = Some(Instant::now());
            let mut runs = 0;
            loop {
                runs += 1;
                let report = f
                    .sweep(Deadline::after(INVOCATION), false, &phases)
                    .await
                    .expect("sweep");
                if report.completed || runs >= 8 {
                    break (report, runs);
                }
            }
        }),
    )
    .await;
    assert!(report.completed && report.pass.errors == 0, "{report:?}");
    let listed = phases
        .listed
        .lock()
        .unwrap()
        .first()
        .copied()
        .unwrap_or_default();
    let quiet = quiet_refresh().await;
    Row {
        snapshots: total,
        agents,
        concurrency,
        burst,
        pass: Some((cost, report, listed, runs)),
        quiet: Some(quiet),
    }
}

fn s(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

fn calls(cost: &Cost) -> String {
    let by: Vec<String> = cost
        .agentkit
        .iter()
        .map(|(a, n)| format!("{n} {a}"))
        .collect();
    format!("{} ({})", cost.calls(), by.join(", "))
}

/// Least squares `y = a + b x`.
fn line(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    (my - b * mx, b)
}

fn sizes(var: &str, default: &str) -> Vec<usize> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().expect("sizes, comma separated"))
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let concurrency = SweepSettings::default().concurrency;
    let mut rows = Vec::new();
    for n in sizes("SNAPWAKE_BENCH_SWEEP_BEFORE", "10000") {
        eprintln!("sweep of {n} snapshots, one at a time...");
        rows.push(run(n, 1).await);
    }
    for n in sizes("SNAPWAKE_BENCH_SWEEP", "10000,30000,100000") {
        eprintln!("sweep of {n} snapshots, side by side...");
        rows.push(run(n, concurrency).await);
    }
    let budget = BudgetSettings::default();
    let lane = |action: &str| {
        budget
            .lanes(action)
            .map_or(f64::INFINITY, |l| f64::from(l.background))
    };

    println!("## The sweep and the refresh as snapshots pile up");
    println!();
    println!(
        "`cargo bench -p snapwake-tests --bench sweep_scale`: a deployment at rest (every agent \
         with the {KEEP} snapshots retention keeps, indexed, 100 owners) in which one agent in \
         {} has just gone to sleep (a snapshot in the last minute, spread over its \
         seconds: one old one to prune). DynamoDB Local and the simulator with AgentKit's assumed account-wide limits \
         (session writes 20/s, reads 50/s), {LATENCY_MS} ms added to every call, every call \
         through the deployment's budget in its background lane (72% of each limit). *Refresh, \
         burst*: the minute after the new snapshots; *pass*: the hourly sweep in invocations of \
         {} s until it completes; *refresh, quiet*: the minute after the pass (the new snapshots \
         are still inside its five minutes of overlap). Side by side: {concurrency} agents and \
         8 listing slices at once; one at a time: 1 and 1, as before. One run each on a shared \
         2-core machine.",
        new_one_in(),
        INVOCATION.as_secs()
    );
    println!();
    println!("| snapshots | agents | at once | refresh, burst: whole (listing) | pass: listing / whole | pass: invocations | pass: AgentKit calls | pass: refused (429) | pass: DynamoDB calls | pass: pruned | refresh, quiet (listing; calls) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let burst = format!(
            "{} ({}; {} calls, {} refused, {} written)",
            s(r.burst.0.took),
            s(Duration::from_millis(r.burst.1.listing_ms)),
            r.burst.0.calls(),
            r.burst.0.refused,
            r.burst.1.indexed,
        );
        let quiet_cell = |q: &(Cost, RefreshReport)| {
            format!(
                "{} ({}; {} calls)",
                s(q.0.took),
                s(Duration::from_millis(q.1.listing_ms)),
                q.0.calls()
            )
        };
        let (Some((cost, report, listed, runs)), Some(quiet)) = (&r.pass, &r.quiet) else {
            println!(
                "| {} | {} | {} | {burst} | – | – | – | – | – | – | {} |",
                r.snapshots,
                r.agents,
                r.concurrency,
                r.quiet.as_ref().map_or("–".into(), quiet_cell)
            );
            continue;
        };
        println!(
            "| {} | {} | {} | {burst} | {} / {} | {} | {} | {} | {} | {} | {} |",
            r.snapshots,
            r.agents,
            r.concurrency,
            s(*listed),
            s(cost.took),
            runs,
            calls(cost),
            cost.refused,
            cost.dynamo,
            report.pass.pruned,
            quiet_cell(quiet),
        );
    }
    println!();

    // The curve: side-by-side rows with every step measured.
    let side: Vec<&Row> = rows
        .iter()
        .filter(|r| r.concurrency > 1 && r.pass.is_some())
        .collect();
    if side.len() >= 2 {
        let million = 1_000_000.0;
        let fit = |f: &dyn Fn(&Row) -> f64| -> (f64, f64, f64) {
            let points: Vec<(f64, f64)> = side.iter().map(|r| (r.snapshots as f64, f(r))).collect();
            let (a, b) = line(&points);
            (a, b, a + b * million)
        };
        let pass_of = |r: &Row| r.pass.clone().unwrap_or_default();
        let pass = fit(&|r| pass_of(r).0.took.as_secs_f64());
        let listing = fit(&|r| pass_of(r).2.as_secs_f64());
        let burst = fit(&|r| r.burst.0.took.as_secs_f64());
        let burst_listing = fit(&|r| r.burst.1.listing_ms as f64 / 1000.0);
        let quiet = fit(&|r| r.quiet.clone().unwrap_or_default().0.took.as_secs_f64());
        let action = |name: &str| fit(&|r| *pass_of(r).0.agentkit.get(name).unwrap_or(&0) as f64).2;
        let lists = action("ListSessionSnapshots") + action("ListSessions");
        let deletes = action("DeleteSessionSnapshot");
        let floor =
            (lists / lane("ListSessionSnapshots")).max(deletes / lane("DeleteSessionSnapshot"));
        println!("### Extrapolated to 1,000,000 snapshots");
        println!();
        println!(
            "A least-squares line through the side-by-side rows (seconds = a + b × snapshots), \
             read at 1,000,000; the budget's floor is the least time the background lane allows \
             for the pass's calls at that size ({:.0} listings at {}/s, {:.0} deletions at {}/s).",
            lists,
            lane("ListSessionSnapshots"),
            deletes,
            lane("DeleteSessionSnapshot")
        );
        println!();
        println!("| step | a | b (per 1,000 snapshots) | at 1,000,000 | its schedule |");
        println!("|---|---|---|---|---|");
        let row = |name: &str, (a, b, at): (f64, f64, f64), bar: &str| {
            println!(
                "| {name} | {a:.1} s | {:.3} s | {at:.0} s | {bar} |",
                b * 1000.0
            )
        };
        row("pass, listing", listing, "");
        row(
            "pass, whole",
            pass,
            &format!(
                "an hour (3600 s), in {} invocations of {} s; the budget's floor {floor:.0} s",
                (pass.2 / INVOCATION.as_secs_f64()).ceil().max(1.0),
                INVOCATION.as_secs()
            ),
        );
        row("refresh, burst", burst, "its minute (60 s)");
        row("refresh, burst: its listing", burst_listing, "");
        row("refresh, quiet", quiet, "its minute (60 s)");
        println!();
    }
}
