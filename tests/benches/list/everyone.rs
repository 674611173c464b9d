//! An admin's pages of everyone (`owner=*`), in a deployment of its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;

use crate::fleet::*;
use crate::sweep::sweep;

/// An admin's pages of everyone over 2,000 snapshots of 100 owners (10 agents of 2 snapshots
/// each): every page of `limit` agents, read from the index.
pub(crate) async fn everyone() {
    const OWNERS_HERE: usize = 100;
    const AGENTS_EACH: usize = 10;
    let store = Arc::new(CountingStore::new(dynamo_store("bench-everyone").await));
    let world = World::registered(Duration::ZERO, &store).await;
    let mut seeds = Vec::new();
    for o in 0..OWNERS_HERE {
        let owner = format!("owner-{o:03}");
        for _ in 0..AGENTS_EACH {
            let id = caller::mint(&owner);
            for _ in 0..2 {
                seeds.push(yesterdays_snapshot(&world, &owner, &id));
            }
        }
    }
    let snapshots = seeds.len();
    let ctl = world.sim.control();
    ctl.seed_snapshots(seeds).expect("seed snapshots");
    sweep(&store, &world).await;
    let f = list_fn(store.clone(), world.client(), ListSettings::default());
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
