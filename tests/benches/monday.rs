//! Monday 08:30 (docs/schedules.md, "At fleet scale"): N agents whose wake schedules all come
//! due in the same minute, ticked as production ticks them (every minute of real time, a
//! 29 s budget each, ticks overlapping when one runs long), on DynamoDB Local and the
//! simulated AgentKit with AgentKit's account-wide limits on (the assumed ones,
//! docs/agentkit.md, with Resume at 50 a second), 200 ms added to every AgentKit call and
//! sessions Ready 5 s after they start. While the burst runs, a person wakes agents of their
//! own, one every two seconds, as the console does (`Prefer: wait`, asking again after a 202,
//! 409, 429 or 503).
//!
//! Measured, per N: the share of agents Ready by the minute, their lateness (Ready − the
//! minute: p50, p99, worst), occurrences missed (not awake within the 15-minute catch-up),
//! AgentKit calls per wake, requests AgentKit refused (429) against those sent, agents with
//! more than one session, and the person's wakes (p50, p99, worst).
//!
//! `SNAPWAKE_BENCH_MONDAY` sets the sizes (default `100,1000`); each size takes the minutes
//! its ticks take. Run by `scripts/bench.sh`, which starts DynamoDB Local; prints Markdown.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::{self, StreamExt};
use snapwake::agentkit::types::MetadataEntry;
use snapwake::ambient::now_ms;
use snapwake::budget::{AgentKitBudget, BudgetSettings};
use snapwake::domain::{AgentKey, Kind, ScheduleRecord};
use snapwake::identity::caller;
use snapwake::invocation::Deadline;
use snapwake::schedule::wake_lead_ms;
use snapwake::schedule::ScheduleRules;
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::{AgentStore, Condition, ScheduleStore};
use snapwake::wake::WakeSettings;
use snapwake_sim::{Fault, RateLimits, SeedSnapshot, SimConfig};
use snapwake_tests::fleet::{at_each_size, people_waking, quantile_s, with_a_consumer};
use snapwake_tests::*;

/// How long a session takes to be Ready once started.
const READINESS: Duration = Duration::from_secs(5);
/// Added to every AgentKit call.
const LATENCY_MS: u64 = 200;
/// Resume's account-wide limit.
const RESUMES_PER_SECOND: u32 = 50;
/// A tick's budget, as the function's timeout leaves it.
const TICK_BUDGET: Duration = Duration::from_secs(29);
/// The tick's catch-up: an occurrence not acted on within it is missed.
const CATCH_UP: Duration = Duration::from_secs(15 * 60);
/// The person's wakes during the burst.
const PERSON_WAKES: usize = 30;
/// Agents due before the fleet, whose wakes the ticks measure readiness from.
const WARM_UP_AGENTS: usize = 10;
/// The readiness the ticks measure from the warm-up: a tick sees a wake it started Ready on
/// the tick after (docs/schedules.md, "Ready at the minute").
const MEASURED_READINESS_MS: u64 = 60_000;

/// How many minutes before the fleet the warm-up is due: far enough for the ticks to have
/// measured it before the fleet's first start (the mornings before, in production), which is
/// the lead `n` wakes in one minute take.
fn warm_up_minutes(n: usize, wakes_per_second: u32) -> u64 {
    let lead = wake_lead_ms(Some(MEASURED_READINESS_MS), n, wakes_per_second);
    lead.div_ceil(60_000) + 2
}

struct Outcome {
    agents: usize,
    ready_by_minute: usize,
    lateness_ms: Vec<u64>,
    missed: usize,
    doubled: usize,
    agentkit_calls: u64,
    throttled: u64,
    ticks: usize,
    person_ms: Vec<u64>,
    /// How long before the minute each agent Ready by it was (ms), sorted.
    early_ms: Vec<u64>,
}

/// Seed `n` asleep agents (a snapshot each, and a record). Answers their ids.
async fn seed(world: &World, store: &DynamoStore, n: usize, first: usize) -> Vec<String> {
    let owners: Vec<String> = (0..n).map(|i| format!("owner-{:03}", i % 200)).collect();
    let ids: Vec<String> = owners.iter().map(|o| caller::mint(o)).collect();
    let seeds = ids
        .iter()
        .zip(&owners)
        .enumerate()
        .map(|(i, (id, owner))| SeedSnapshot {
            tool_id: world.recoverable.clone(),
            user_session_id: Some(id.clone()),
            session_id: Some(format!("s-{}", first + i)),
            session_metadata: vec![MetadataEntry::string("Username", owner)],
            ..SeedSnapshot::default()
        })
        .collect();
    world.sim.control().seed_snapshots(seeds).unwrap();
    stream::iter(ids.iter().zip(&owners))
        .for_each_concurrent(32, |(id, owner)| async move {
            let key = AgentKey::new(Kind::Codex, id.clone());
            let changes = world.asleep_record(owner);
            store
                .update(&key, &Condition::Absent, &changes)
                .await
                .unwrap();
        })
        .await;
    ids
}

/// A wake schedule for each of `ids`, due at `due_ms`.
async fn schedule(store: &DynamoStore, ids: &[String], due_ms: u64) {
    stream::iter(ids)
        .for_each_concurrent(32, |id| async move {
            let schedule = ScheduleRecord {
                key: Some(AgentKey::new(Kind::Codex, id.clone())),
                timezone: "UTC".into(),
                wake: Some("30 8 * * MON-FRI".into()),
                sleep: None,
                next_wake_ms: Some(due_ms),
                next_sleep_ms: None,
                ..ScheduleRecord::default()
            };
            store.put_schedule(&schedule, 0).await.unwrap();
        })
        .await;
}

async fn run(n: usize) -> Outcome {
    let store = dynamo_store(&format!("bench-monday-{n}")).await;
    let world = World::start_with(SimConfig {
        session_ready_delay: READINESS,
        rate_limits: RateLimits::agentkit()
            .with("ResumeSessionFromSnapshot", Some(RESUMES_PER_SECOND)),
        ..SimConfig::default()
    })
    .await;
    world.register(&store).await;
    let ctl = world.sim.control();
    let person: Vec<String> = (0..PERSON_WAKES)
        .map(|i| world.asleep_agent("alice", &format!("Mine {i}")).0)
        .collect();

    // The minute everything is due: far enough ahead for the schedules to be written first
    // (about a minute per 2,000 on DynamoDB Local), and whole. Before it, a few agents of the
    // same kind come due WARM_UP earlier (the mornings before, in short): the ticks measure
    // how long the kind takes to be Ready from them, which is what the fleet's lead is made of.
    let ids = seed(&world, &store, n, 0).await;
    let earlier = seed(&world, &store, WARM_UP_AGENTS, n).await;
    // The ticks' leads allow for the budget's background Resumes at their slowest, as the
    // configuration does.
    let settings = BudgetSettings {
        limits: ctl.rate_limits(),
        ..BudgetSettings::default()
    };
    let rules = ScheduleRules::default().paced_by(Some(&settings));
    let wakes_per_second = rules.wakes_per_second;
    let warm_up = warm_up_minutes(n, wakes_per_second);
    let minute = (now_ms() / 60_000 + 2 + warm_up + n as u64 / 2_000) * 60_000;
    let first_tick = minute - warm_up * 60_000;
    schedule(&store, &earlier, first_tick).await;
    schedule(&store, &ids, minute).await;
    assert!(
        now_ms() < minute,
        "the schedules were written after their minute"
    );
    ctl.inject(Fault::latency(None, LATENCY_MS)).unwrap();
    ctl.reset_counters();
    // The deployment's AgentKit budget, kept in the same table, assuming the simulator's
    // limits.
    let budget = AgentKitBudget::new(store.clone(), settings);
    let mut function = resume_fn(
        store.clone(),
        world.client().with_budget(Arc::new(budget)),
        WakeSettings::default(),
    );
    function.schedules = rules;
    // Deployed, the tick hands each due occurrence to the queue, which the resume function
    // consumes at the event source mapping's concurrency.
    let (f, queue, consumer) = with_a_consumer(function, TICK_BUDGET);

    // When each scheduled agent's session was first seen Ready (epoch ms), and how many
    // sessions each has.
    let scheduled: HashSet<String> = ids.iter().cloned().collect();
    let ready: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let watching = tokio::spawn({
        let (ctl, ready, scheduled) = (ctl.clone(), ready.clone(), scheduled.clone());
        async move {
            loop {
                for s in ctl.sessions() {
                    let Some(id) = s.user_session_id.clone() else {
                        continue;
                    };
                    if s.status.as_deref() == Some("Ready") && scheduled.contains(&id) {
                        ready.lock().unwrap().entry(id).or_insert_with(now_ms);
                    }
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    });

    // Ticks at every minute from the warm-up's, as EventBridge Scheduler sends them, until
    // every agent is Ready or the catch-up is over; the person starts at the minute.
    tokio::time::sleep(Duration::from_millis(first_tick.saturating_sub(now_ms()))).await;
    let persons = tokio::spawn({
        let (f, person) = (f.clone(), person.clone());
        async move {
            tokio::time::sleep(Duration::from_millis(minute.saturating_sub(now_ms()))).await;
            people_waking(f, person, CATCH_UP)
                .await
                .expect("the person's wakes")
        }
    });
    let mut ticks = Vec::new();
    let mut at = first_tick;
    while at <= minute + CATCH_UP.as_millis() as u64 && ready.lock().unwrap().len() < n {
        let f = f.clone();
        ticks.push(tokio::spawn(async move {
            f.tick(at, Deadline::after(TICK_BUDGET)).await
        }));
        at += 60_000;
        tokio::time::sleep(Duration::from_millis(at.saturating_sub(now_ms()))).await;
    }
    let tick_count = ticks.len();
    for t in ticks {
        let report = t.await.unwrap();
        assert!(report.is_ok(), "{report:?}");
    }
    let mut person_ms = persons.await.unwrap();
    tokio::time::sleep(READINESS + Duration::from_secs(1)).await;
    watching.abort();
    consumer.abort();
    let queued = queue.counts();
    assert_eq!(
        queued.failed, 0,
        "every due occurrence finished with: {queued:?}"
    );

    let counters = ctl.counters();
    let ready = ready.lock().unwrap().clone();
    let mut lateness_ms: Vec<u64> = ready.values().map(|t| t.saturating_sub(minute)).collect();
    lateness_ms.sort_unstable();
    let mut early_ms: Vec<u64> = ready
        .values()
        .filter(|t| **t <= minute)
        .map(|t| minute - t)
        .collect();
    early_ms.sort_unstable();
    person_ms.sort_unstable();
    let doubled = ids
        .iter()
        .filter(|id| counters.live_sessions_of(id) > 1)
        .count();
    Outcome {
        agents: n,
        ready_by_minute: ready.values().filter(|t| **t <= minute).count(),
        missed: n - ready.len(),
        lateness_ms,
        doubled,
        agentkit_calls: counters.actions.values().map(|a| a.received).sum(),
        throttled: counters.throttled,
        ticks: tick_count,
        person_ms,
        early_ms,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rows = at_each_size("SNAPWAKE_BENCH_MONDAY", "100,1000", "Monday 08:30", run).await;
    println!("## Monday 08:30: a fleet due in one minute");
    println!();
    println!(
        "`cargo bench -p snapwake-tests --bench monday`: N agents whose wake schedules come due \
         in the same minute, ticked every minute of real time ({}-s budget each) from as many \
         minutes before it as its lead takes, plus two ({WARM_UP_AGENTS} agents of the same kind due then, from whose wakes \
         the ticks measure readiness), on DynamoDB Local and the simulator with AgentKit's assumed account-wide \
         limits (Resume {RESUMES_PER_SECOND}/s), {LATENCY_MS} ms added to every AgentKit call and \
         sessions Ready {} s after they start. Lateness: when an agent's session was first seen \
         Ready, less the minute. Missed: not Ready within the 15-minute catch-up. Calls: every \
         AgentKit request (the person's included) per scheduled agent. A person wakes {PERSON_WAKES} \
         agents of their own during the burst, one every 2 s, each asked again until 200. One \
         run each on a shared 2-core machine.",
        TICK_BUDGET.as_secs(),
        READINESS.as_secs()
    );
    println!();
    println!("| agents | ticks | Ready by the minute | Ready ahead of it p50 / most | lateness p50 / p99 / worst | missed | AgentKit calls per wake | refused (429) | two sessions | person's wake p50 / p99 / worst |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for o in &rows {
        println!(
            "| {} | {} | {:.1}% | {:.1} / {:.1} s | {:.1} / {:.1} / {:.1} s | {} | {:.1} | {} of {} ({:.1}%) | {} | {:.1} / {:.1} / {:.1} s |",
            o.agents,
            o.ticks,
            100.0 * o.ready_by_minute as f64 / o.agents as f64,
            quantile_s(&o.early_ms, 0.5),
            quantile_s(&o.early_ms, 1.0),
            quantile_s(&o.lateness_ms, 0.5),
            quantile_s(&o.lateness_ms, 0.99),
            quantile_s(&o.lateness_ms, 1.0),
            o.missed,
            o.agentkit_calls as f64 / o.agents as f64,
            o.throttled,
            o.agentkit_calls,
            100.0 * o.throttled as f64 / o.agentkit_calls.max(1) as f64,
            o.doubled,
            quantile_s(&o.person_ms, 0.5),
            quantile_s(&o.person_ms, 0.99),
            quantile_s(&o.person_ms, 1.0),
        );
    }
    println!();
}
