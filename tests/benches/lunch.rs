//! Everyone to lunch (docs/idle.md, "How it is found"): N awake agents that all become idle in
//! the same minute, put to sleep by idle sleep as production does it (the tick every minute of
//! real time with a 29 s budget, each idle agent handed to the queue, the consumer working
//! them through the AgentKit budget's background lane), on DynamoDB Local and the simulator
//! with AgentKit's assumed account-wide limits (CreateSessionSnapshot and DeleteSession 20 a
//! second each), 200 ms added to every AgentKit call, snapshots Ready 5 s after they are asked
//! for and sessions Ready 5 s after they start. While the fleet goes to sleep a person wakes
//! agents of their own, one every two seconds, as the console does (`Prefer: wait`, asking
//! again after a 202, 409, 429 or 503): people's calls go before the background lane.
//!
//! Measured, per N: how long after the minute every agent was asleep (no live session), the
//! p50 and p99 of that, agents still awake after 15 minutes, snapshots kept (one each),
//! AgentKit calls per sleep, requests AgentKit refused (429), and the person's wakes (p50,
//! p99, worst).
//!
//! `SNAPWAKE_BENCH_LUNCH` sets the sizes (default `100,1000`), `SNAPWAKE_BENCH_LUNCH_WRITES` the
//! account's limit for CreateSessionSnapshot and DeleteSession (default 20 a second, the
//! assumed one; quality.md's Monday assumes 50 for Resume). Run by `scripts/bench.sh`, which
//! starts DynamoDB Local; prints Markdown.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::{self, StreamExt};
use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::types::{Action, CreateSessionSnapshot, DeleteSession};
use snapwake::ambient::now_ms;
use snapwake::budget::{AgentKitBudget, BudgetSettings};
use snapwake::domain::{AgentKey, Description, Kind, Retention, WakeState};
use snapwake::identity::caller;
use snapwake::invocation::Deadline;
use snapwake::schedule::ScheduleRules;
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::{AgentStore, Changes, Condition};
use snapwake::wake::{IdlePolicy, WakeSettings};
use snapwake_sim::{Fault, RateLimits, SeedSession, SimConfig};
use snapwake_tests::fleet::{at_each_size, people_waking, quantile_s, with_a_consumer};
use snapwake_tests::*;

/// How long a session takes to be Ready once started, and a snapshot once asked for.
const READINESS: Duration = Duration::from_secs(5);
/// Added to every AgentKit call.
const LATENCY_MS: u64 = 200;
/// A tick's budget, as the function's timeout leaves it.
const TICK_BUDGET: Duration = Duration::from_secs(29);
/// How long the bench waits for the fleet to be asleep.
const PATIENCE: Duration = Duration::from_secs(15 * 60);
/// The person's wakes during the lunch.
const PERSON_WAKES: usize = 30;
/// The account's limit for CreateSessionSnapshot and DeleteSession, a second.
fn writes_per_second() -> u32 {
    std::env::var("SNAPWAKE_BENCH_LUNCH_WRITES")
        .ok()
        .map(|v| {
            v.trim()
                .parse()
                .expect("SNAPWAKE_BENCH_LUNCH_WRITES: a number")
        })
        .unwrap_or(20)
}

/// The deployment's idle time (its value does not matter here: every agent's is due at once).
const IDLE_MINUTES: u32 = 15;

struct Outcome {
    agents: usize,
    ticks: usize,
    /// When each agent was first seen with no live session, less the minute (ms), sorted.
    asleep_ms: Vec<u64>,
    still_awake: usize,
    snapshots: usize,
    agentkit_calls: u64,
    throttled: u64,
    person_ms: Vec<u64>,
}

/// Seed `n` awake agents (a Ready session each, and a record saying so) idle at `idle_ms`.
/// Answers their ids.
async fn seed(world: &World, store: &DynamoStore, n: usize, idle_ms: u64) -> Vec<String> {
    let owners: Vec<String> = (0..n).map(|i| format!("owner-{:03}", i % 200)).collect();
    let ids: Vec<String> = owners.iter().map(|o| caller::mint(o)).collect();
    let ctl = world.sim.control();
    let sessions: Vec<String> = ids
        .iter()
        .zip(&owners)
        .map(|(id, owner)| {
            ctl.seed_session(SeedSession {
                tool_id: world.recoverable.clone(),
                user_session_id: Some(id.clone()),
                metadata: vec![MetadataEntry::string("Username", owner)],
                ..SeedSession::default()
            })
            .expect("a session")
        })
        .collect();
    stream::iter(ids.iter().zip(&owners).zip(&sessions))
        .for_each_concurrent(32, |((id, owner), session)| async move {
            let changes = Changes {
                state: Some(WakeState::Awake),
                session_id: Some(Some(session.clone())),
                idle_at_ms: Some(Some(idle_ms)),
                describe: Some(Description {
                    owner: Some(owner.clone()),
                    tool_id: Some(world.recoverable.clone()),
                    region: Some(REGION.into()),
                    retention: Some(Retention::Recoverable),
                    ..Description::default()
                }),
                ..Changes::default()
            };
            let key = AgentKey::new(Kind::Codex, id.clone());
            store
                .update(&key, &Condition::Absent, &changes)
                .await
                .unwrap();
        })
        .await;
    ids
}

async fn run(n: usize) -> Outcome {
    let store = dynamo_store(&format!("bench-lunch-{n}")).await;
    let world = World::start_with(SimConfig {
        session_ready_delay: READINESS,
        rate_limits: RateLimits::agentkit()
            .with(CreateSessionSnapshot::NAME, Some(writes_per_second()))
            .with(DeleteSession::NAME, Some(writes_per_second())),
        ..SimConfig::default()
    })
    .await;
    world.register(&store).await;
    let ctl = world.sim.control();
    ctl.set_snapshot_ready_delay(READINESS);
    let person: Vec<String> = (0..PERSON_WAKES)
        .map(|i| world.asleep_agent("alice", &format!("Mine {i}")).0)
        .collect();

    // The minute everyone goes to lunch: far enough ahead for the records to be written first
    // (about a minute per 2,000 on DynamoDB Local), and whole.
    let minute = (now_ms() / 60_000 + 2 + n as u64 / 2_000) * 60_000;
    let ids = seed(&world, &store, n, minute).await;
    assert!(
        now_ms() < minute,
        "the records were written after their minute"
    );
    ctl.inject(Fault::latency(None, LATENCY_MS)).unwrap();
    ctl.reset_counters();
    let settings = BudgetSettings {
        limits: ctl.rate_limits(),
        ..BudgetSettings::default()
    };
    // The tick hands idle agents over at the background lane's pace, as `Config` reads it.
    let rules = ScheduleRules::default().paced_by(Some(&settings));
    let budget = AgentKitBudget::new(store.clone(), settings);
    let mut function = resume_fn(
        store.clone(),
        world.client().with_budget(Arc::new(budget)),
        WakeSettings {
            idle: IdlePolicy {
                default_minutes: IDLE_MINUTES,
            },
            ..WakeSettings::default()
        },
    );
    function.schedules = rules;
    let (f, _, consumer) = with_a_consumer(function, TICK_BUDGET);

    // When each agent was first seen with no live session (epoch ms).
    let fleet: HashSet<String> = ids.iter().cloned().collect();
    let asleep: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let watching = tokio::spawn({
        let (ctl, asleep, fleet) = (ctl.clone(), asleep.clone(), fleet.clone());
        async move {
            loop {
                let live: HashSet<String> = ctl
                    .sessions()
                    .into_iter()
                    .filter(|s| s.is_active())
                    .filter_map(|s| s.user_session_id)
                    .collect();
                let at = now_ms();
                {
                    let mut asleep = asleep.lock().unwrap();
                    for id in fleet.iter().filter(|id| !live.contains(*id)) {
                        asleep.entry(id.clone()).or_insert(at);
                    }
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    });

    tokio::time::sleep(Duration::from_millis(minute.saturating_sub(now_ms()))).await;
    let persons = people_waking(f.clone(), person.clone(), PATIENCE);
    let mut ticks = Vec::new();
    let mut at = minute;
    while at <= minute + PATIENCE.as_millis() as u64 && asleep.lock().unwrap().len() < n {
        let f = f.clone();
        ticks.push(tokio::spawn(async move {
            f.tick(at, Deadline::after(TICK_BUDGET)).await
        }));
        at += 60_000;
        while now_ms() < at && asleep.lock().unwrap().len() < n {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    let tick_count = ticks.len();
    for t in ticks {
        let report = t.await.unwrap();
        assert!(report.is_ok(), "{report:?}");
    }
    let mut person_ms = persons.await.unwrap();
    watching.abort();
    consumer.abort();

    let counters = ctl.counters();
    let asleep = asleep.lock().unwrap().clone();
    let mut asleep_ms: Vec<u64> = asleep.values().map(|t| t.saturating_sub(minute)).collect();
    asleep_ms.sort_unstable();
    person_ms.sort_unstable();
    let snapshots: usize = ids
        .iter()
        .map(|id| world.snapshots_of(id).len().min(1))
        .sum();
    Outcome {
        agents: n,
        ticks: tick_count,
        still_awake: n - asleep.len(),
        asleep_ms,
        snapshots,
        agentkit_calls: counters.actions.values().map(|a| a.received).sum(),
        throttled: counters.throttled,
        person_ms,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rows = at_each_size("SNAPWAKE_BENCH_LUNCH", "100,1000", "lunch", run).await;
    println!("## Everyone to lunch: a fleet idle in one minute");
    println!();
    println!(
        "`cargo bench -p snapwake-tests --bench lunch`: N awake agents whose idle time comes in \
         the same minute, put to sleep by idle sleep through the tick (every minute of real time, \
         {}-s budget each), the queue and its consumer, on DynamoDB Local and the simulator with \
         account-wide limits (CreateSessionSnapshot and DeleteSession {}/s, reads 50/s), \
         {LATENCY_MS} ms added to every AgentKit call, snapshots and sessions Ready {} s after \
         they are asked for. Asleep: when the agent's session was first seen ended, less the \
         minute. A person wakes {PERSON_WAKES} agents of their own during it, one every 2 s, each \
         asked again until 200. One run each on a shared 2-core machine.",
        TICK_BUDGET.as_secs(),
        writes_per_second(),
        READINESS.as_secs()
    );
    println!();
    println!("| agents | ticks | all asleep after | asleep p50 / p99 | still awake | snapshots kept | AgentKit calls per sleep | refused (429) | person's wake p50 / p99 / worst |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for o in &rows {
        println!(
            "| {} | {} | {:.1} s | {:.1} / {:.1} s | {} | {} | {:.1} | {} of {} ({:.1}%) | {:.1} / {:.1} / {:.1} s |",
            o.agents,
            o.ticks,
            quantile_s(&o.asleep_ms, 1.0),
            quantile_s(&o.asleep_ms, 0.5),
            quantile_s(&o.asleep_ms, 0.99),
            o.still_awake,
            o.snapshots,
            o.agentkit_calls as f64 / o.agents as f64,
            o.throttled,
            o.agentkit_calls,
            100.0 * o.throttled as f64 / o.agentkit_calls.max(1) as f64,
            quantile_s(&o.person_ms, 0.5),
            quantile_s(&o.person_ms, 0.99),
            quantile_s(&o.person_ms, 1.0),
        );
    }
    println!();
}
