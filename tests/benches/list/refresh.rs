//! The minute refresh over the list bench's deployment, after the sweep indexed it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use snapwake::invocation::Deadline;
use snapwake::store::AgentStore;
use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;

use crate::fleet::*;

/// The minute refresh over the deployment the sweep indexed: its first read (every snapshot
/// page of the Tool once), quiet minutes, and a snapshot another system made, timed from its
/// making to the first list that shows it (with the schedule's minute added: the refresh runs
/// once a minute).
pub(crate) async fn refresh<
    S: AgentStore + snapwake::store::ScheduleStore + snapwake::store::UsageStore,
>(
    store: &Arc<CountingStore<S>>,
    world: &World,
    list: &List<Arc<CountingStore<S>>, AgentKitClient>,
    snapshots: usize,
) {
    let ctl = world.sim.control();
    let delete = delete_fn(
        store.clone(),
        world.client(),
        snapwake_delete::DeleteSettings::default(),
    );
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
        (
            started.elapsed(),
            calls,
            store.calls.total() - before,
            report,
        )
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
    let outside = caller::mint(me);
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
