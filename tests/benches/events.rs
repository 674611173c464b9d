//! State-change events through the table's own stream (docs/events.md), as `snapwake serve`
//! relays them: agents on DynamoDB Local with the table's stream, each woken and put to sleep
//! through the functions (the API) on the simulated AgentKit, the stream read every 250 ms
//! (`snapwake::events::follow`, serve's relay) and each event published by snapwake's real
//! EventBridge publisher to a bus double over HTTP. Measured, at 100 and 1,000 state changes:
//!
//! - write-to-bus latency, p50 and p99: from the answer of the request whose write made the
//!   change (the write landed before it) to the bus receiving that change's event;
//! - events published per 1,000 state changes (one each: none lost, none repeated), and stream
//!   records read per 1,000 (the writes that announce nothing: lock writes, the budget's
//!   items, the records the sim's refresh learns).
//!
//! Run by `scripts/bench.sh`, which starts DynamoDB Local; prints Markdown.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use snapwake::ambient::now_ms;
use snapwake::store::{ChangeSource, RecordChange};
use snapwake_tests::event_bus::EventBusDouble;
use snapwake_tests::relay::table_stream;
use snapwake_tests::*;

/// serve's poll of the stream (cli/src/serve/mod.rs, `STREAM_POLL`).
const POLL: Duration = Duration::from_millis(250);
/// Requests in flight at once: a studio's people, not one caller in a loop.
const AT_ONCE: usize = 10;

/// A change source that counts the records it hands out.
struct Counted<C> {
    inner: C,
    records: Arc<AtomicU64>,
}

impl<C: ChangeSource> ChangeSource for Counted<C> {
    async fn next(&mut self) -> Result<Vec<RecordChange>, String> {
        let changes = self.inner.next().await?;
        self.records
            .fetch_add(changes.len() as u64, Ordering::Relaxed);
        Ok(changes)
    }
}

struct Measured {
    changes: usize,
    published: usize,
    records: u64,
    p50_ms: u64,
    p99_ms: u64,
    max_ms: u64,
    took: Duration,
}

/// `changes` state changes (half wakes, half sleeps) over `changes / 4` agents, each woken and
/// put to sleep twice.
async fn run(changes: usize) -> Measured {
    let agents = changes / 4;
    let store = Arc::new(dynamo_store_streamed(&format!("bench-events-{changes}")).await);
    let world = World::registered(Duration::ZERO, &store).await;
    let api = Arc::new(Api::new(store.clone(), world.client(), identity()));
    let ids: Vec<String> = (0..agents)
        .map(|i| world.asleep_agent("alice", &format!("Announced {i}")).0)
        .collect();
    let bus = EventBusDouble::start().await;
    let records = Arc::new(AtomicU64::new(0));
    let source = Counted {
        inner: table_stream(&store).await,
        records: records.clone(),
    };
    let relay = tokio::spawn(snapwake::events::follow(
        source,
        store.clone(),
        bus.publisher(),
        POLL,
    ));

    // Each change: (agent, detail-type, when its request answered).
    let started = Instant::now();
    let mut answered: Vec<(String, &'static str, u64)> = Vec::new();
    for (verb, state, detail_type) in [
        ("resume", "awake", "snapwake.agent.awake"),
        ("sleep", "asleep", "snapwake.agent.asleep"),
        ("resume", "awake", "snapwake.agent.awake"),
        ("sleep", "asleep", "snapwake.agent.asleep"),
    ] {
        let round: Vec<(String, u64)> = futures::stream::iter(ids.clone())
            .map(|id| {
                let api = api.clone();
                async move {
                    let (status, body) =
                        settle_alices(&*api, &id, verb, Duration::from_secs(60)).await;
                    assert_eq!(
                        (status, body["state"].as_str()),
                        (200, Some(state)),
                        "{body}"
                    );
                    (id, now_ms())
                }
            })
            .buffer_unordered(AT_ONCE)
            .collect()
            .await;
        answered.extend(round.into_iter().map(|(id, at)| (id, detail_type, at)));
    }
    let took = started.elapsed();

    // Wait for every change's event (at most a minute past the last answer).
    let limit = Instant::now() + Duration::from_secs(60);
    let of_ours = |bus: &EventBusDouble| {
        bus.published()
            .into_iter()
            .filter(|d| {
                d.detail_type == "snapwake.agent.awake" || d.detail_type == "snapwake.agent.asleep"
            })
            .collect::<Vec<_>>()
    };
    while of_ours(&bus).len() < answered.len() && Instant::now() < limit {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // One more poll's worth, so a repeat would show.
    tokio::time::sleep(POLL * 4).await;
    relay.abort();
    let published = of_ours(&bus);

    // Per agent and type, the n-th answer goes with the n-th event (each agent's events are in
    // version order).
    let mut arrivals: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for d in &published {
        let agent = d.detail["agent_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        arrivals
            .entry((agent, d.detail_type.clone()))
            .or_default()
            .push(d.received_ms);
    }
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut latencies: Vec<u64> = Vec::new();
    for (agent, detail_type, at) in &answered {
        let key = (agent.clone(), detail_type.to_string());
        let n = seen.entry(key.clone()).or_default();
        let arrived = arrivals.get(&key).and_then(|a| a.get(*n)).copied();
        *n += 1;
        let arrived = arrived.unwrap_or_else(|| panic!("no event for {agent} {detail_type} #{n}"));
        latencies.push(arrived.saturating_sub(*at));
    }
    latencies.sort_unstable();
    let pct = |p: f64| {
        latencies[((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1]
    };
    Measured {
        changes: answered.len(),
        published: published.len(),
        records: records.load(Ordering::Relaxed),
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        max_ms: *latencies.last().unwrap_or(&0),
        took,
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        println!("## State-change events through the table's stream\n");
        println!(
            "`cargo bench -p snapwake-tests --bench events`: agents on DynamoDB Local with the \
             table's stream, each woken and put to sleep twice through the functions (the \
             simulated AgentKit answering at once), ten requests at a time; the stream read every \
             250 ms as `snapwake serve` reads it, each event published by snapwake's EventBridge \
             publisher to a bus double over HTTP. Latency: from the answer of the request whose \
             write made the change to the bus receiving its event.\n"
        );
        println!("| state changes | events published | per 1,000 changes | stream records per 1,000 | write-to-bus p50 | p99 | max | the changes took |");
        println!("|---|---|---|---|---|---|---|---|");
        for changes in [100, 1_000] {
            let m = run(changes).await;
            println!(
                "| {} | {} | {:.0} | {:.0} | {} ms | {} ms | {} ms | {:.1} s |",
                m.changes,
                m.published,
                m.published as f64 * 1000.0 / m.changes as f64,
                m.records as f64 * 1000.0 / m.changes as f64,
                m.p50_ms,
                m.p99_ms,
                m.max_ms,
                m.took.as_secs_f64()
            );
            assert_eq!(m.published, m.changes, "one event per state change");
        }
        println!();
    });
}
