//! The retention sweep over the list bench's deployment: its first pass and a second one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use snapwake::invocation::Deadline;
use snapwake::store::AgentStore;
use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;

use crate::fleet::*;

/// What one sweep run cost.
pub(crate) struct SweepCost {
    report: snapwake_delete::SweepReport,
    took: Duration,
    agentkit: Vec<(String, u64)>,
    dynamo: u64,
}

pub(crate) async fn sweep<S: AgentStore + snapwake::store::ScheduleStore>(
    store: &Arc<CountingStore<S>>,
    world: &World,
) -> SweepCost {
    let ctl = world.sim.control();
    ctl.reset_counters();
    let before = store.calls.total();
    let delete = delete_fn(
        store.clone(),
        world.client(),
        snapwake_delete::DeleteSettings::default(),
    );
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

pub(crate) fn print_sweeps(snapshots: usize, first: &SweepCost, second: &SweepCost) {
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
