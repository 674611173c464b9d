//! The schedules' tick (docs/schedules.md) on DynamoDB Local and the simulated AgentKit:
//! 10,000 schedules of which 100 are due. The tick reads the due ones from the sparse `by_due`
//! index and nothing else; measured are the index items it read, its DynamoDB calls by kind,
//! its AgentKit calls and its time, for
//!
//! (a) a tick that wakes 100 asleep agents (100 Resumes), then the ticks that carry those
//!     wakes until every agent is awake;
//! (b) a tick whose 100 due agents are awake already (each left alone);
//! (c) a tick with nothing due.
//!
//! Run by `scripts/bench.sh`, which starts DynamoDB Local; prints Markdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use snapwake::agentkit::types::MetadataEntry;
use snapwake::domain::{AgentKey, Kind, ScheduleRecord, WakeState};
use snapwake::identity::caller;
use snapwake::invocation::Deadline;
use snapwake::store::{AgentStore, Condition, DueQuery, ScheduleStore};
use snapwake_resume::Resume;
use snapwake_sim::SeedSnapshot;
use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;

const SCHEDULES: usize = 10_000;
const DUE: usize = 100;
/// 2027-03-22T07:30:00Z: when the due ones are due.
const T: u64 = 1_805_700_600_000;

fn schedule(key: AgentKey, next_wake_ms: u64) -> ScheduleRecord {
    ScheduleRecord {
        key: Some(key),
        timezone: "Europe/Berlin".into(),
        wake: Some("30 8 * * MON-FRI".into()),
        sleep: None,
        next_wake_ms: Some(next_wake_ms),
        next_sleep_ms: None,
        ..ScheduleRecord::default()
    }
}

struct Measured {
    time: Duration,
    due: usize,
    woke: usize,
    carried: usize,
    gets: u64,
    updates: u64,
    schedule_calls: u64,
    queries: u64,
    resumes: u64,
    agentkit: u64,
}

async fn measure(
    f: &Resume<
        Arc<CountingStore<snapwake::store::dynamo::DynamoStore>>,
        snapwake::agentkit::AgentKitClient,
    >,
    store: &CountingStore<snapwake::store::dynamo::DynamoStore>,
    world: &World,
    at: u64,
) -> Measured {
    let ctl = world.sim.control();
    ctl.reset_counters();
    let calls = &store.calls;
    let before = (
        calls.get(&calls.gets),
        calls.get(&calls.updates),
        calls.get(&calls.schedules),
        calls.get(&calls.queries),
    );
    let started = Instant::now();
    let report = f
        .tick_and_consume(at, Deadline::after(Duration::from_secs(60)))
        .await
        .unwrap();
    let time = started.elapsed();
    assert_eq!(report.errors, 0, "{report:?}");
    let counters = ctl.counters();
    Measured {
        time,
        due: report.due,
        woke: report.woke,
        carried: report.carried,
        gets: calls.get(&calls.gets) - before.0,
        updates: calls.get(&calls.updates) - before.1,
        schedule_calls: calls.get(&calls.schedules) - before.2,
        queries: calls.get(&calls.queries) - before.3,
        resumes: counters.received("ResumeSessionFromSnapshot"),
        agentkit: counters.actions.values().map(|a| a.received).sum(),
    }
}

fn row(name: &str, m: &Measured) -> String {
    format!(
        "| {name} | {:.0} ms | {} | {} | {} | {} | {} | {} | {} / {} |",
        m.time.as_secs_f64() * 1000.0,
        m.due,
        m.woke + m.carried,
        m.schedule_calls,
        m.gets,
        m.updates,
        m.queries,
        m.resumes,
        m.agentkit,
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dynamo = dynamo_store("bench-tick").await;
    let store = Arc::new(CountingStore::new(dynamo));
    let world = World::registered(Duration::from_millis(500), &store.inner).await;
    let ctl = world.sim.control();

    // 100 asleep agents with records and due schedules; 9,900 schedules due in the weeks ahead
    // (their agents need not exist: the tick never reads them).
    let mut due_keys = Vec::new();
    for i in 0..DUE {
        let owner = format!("owner-{i:03}");
        let agent_id = caller::mint(&owner);
        ctl.seed_snapshot(SeedSnapshot {
            tool_id: world.recoverable.clone(),
            user_session_id: Some(agent_id.clone()),
            session_id: Some(format!("s-{i}")),
            session_metadata: vec![MetadataEntry::string("Username", &owner)],
            ..SeedSnapshot::default()
        })
        .unwrap();
        let key = AgentKey::new(Kind::Codex, agent_id);
        store
            .inner
            .update(&key, &Condition::Absent, &world.asleep_record(&owner))
            .await
            .unwrap();
        due_keys.push(key);
    }
    let started = Instant::now();
    let all: Vec<ScheduleRecord> = (0..SCHEDULES)
        .map(|i| {
            if i < DUE {
                schedule(due_keys[i].clone(), T)
            } else {
                let later = T + 2 * 86_400_000 + 3_600_000 * (i as u64 % 500);
                schedule(AgentKey::new(Kind::Codex, format!("later-{i:05}")), later)
            }
        })
        .collect();
    stream::iter(all)
        .for_each_concurrent(32, |s| {
            let store = &store.inner;
            async move {
                store.put_schedule(&s, 0).await.unwrap();
            }
        })
        .await;
    let seeded = started.elapsed();
    let quiet_all = store
        .inner
        .due_schedules(DueQuery::until(u64::MAX / 2, 1))
        .await
        .unwrap();
    assert!(!quiet_all.records.is_empty());

    let f = resume_fn(store.clone(), world.client(), quick_wake());

    // (a) 100 asleep agents due: the tick wakes them, later ticks carry the wakes.
    let first = measure(&f, &store, &world, T).await;
    assert_eq!(
        (first.due, first.resumes),
        (DUE, DUE as u64),
        "one Resume per due agent"
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    let mut carried = Vec::new();
    for m in 1..=5u64 {
        let c = measure(&f, &store, &world, T + m * 60_000).await;
        let done = c.due == 0;
        carried.push(c);
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut awake = 0;
    for key in &due_keys {
        if store
            .inner
            .get(key)
            .await
            .unwrap()
            .is_some_and(|r| r.state == WakeState::Awake)
        {
            awake += 1;
        }
    }
    assert_eq!(awake, DUE, "every due agent awake");

    // (b) The same 100 due again (a day later), already awake: left alone.
    for key in &due_keys {
        let s = store.inner.get_schedule(key).await.unwrap().unwrap();
        let mut again = s.clone();
        again.next_wake_ms = Some(T + 86_400_000);
        store.inner.put_schedule(&again, s.version).await.unwrap();
    }
    let awake_tick = measure(&f, &store, &world, T + 86_400_000).await;
    assert_eq!((awake_tick.due, awake_tick.resumes), (DUE, 0));

    // (c) Nothing due.
    let quiet = measure(&f, &store, &world, T + 86_400_000 + 60_000).await;
    assert_eq!(quiet.due, 0);

    println!("## Schedules' tick: {SCHEDULES} schedules, {DUE} due");
    println!();
    println!(
        "`cargo bench -p snapwake-tests --bench tick`: {SCHEDULES} schedule items on DynamoDB \
         Local ({:.0} s to write), {DUE} of them due at the tick's time; the rest due two to 23 days later. The tick reads the due ones from the sparse `by_due` index (\"due read\": \
         items it was given) and nothing else. DynamoDB calls by kind: schedule calls (the `by_due` \
         queries, a page of 100 and the empty one after it, and two conditional writes per due \
         schedule: the decision, then the outcome), agent-record reads and writes (the lock's), \
         owner-index queries; AgentKit calls. One run each on a shared 2-core machine.",
        seeded.as_secs_f64()
    );
    println!();
    println!("| tick | time | due read | acted on | schedule calls | record reads | record writes | owner-index queries | Resumes / AgentKit calls |");
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "{}",
        row("(a) 100 asleep agents due: wakes started", &first)
    );
    for (i, c) in carried.iter().enumerate() {
        println!("{}", row(&format!("(a) carried, minute {}", i + 1), c));
    }
    println!("{}", row("(b) 100 due, already awake", &awake_tick));
    println!("{}", row("(c) nothing due", &quiet));
    println!();
}
