//! Deploy benchmark (docs/architecture.md, "Quality bars and where they are checked"): the 7-Tool
//! catalogue deployed from nothing against the simulator with its 3-writes-per-second Tool write
//! throttle on, the deploy lock and the registry on DynamoDB Local; then the same deploy again,
//! which must write nothing.
//!
//! Run by `scripts/bench.sh`, which starts DynamoDB Local; prints Markdown.

use std::time::{Duration, Instant};

use snapwake::invocation::Deadline;
use snapwake_deploy::reconcile::{
    no_retry_policy, Catalogue, DeployOptions, DeploySettings, EntryStatus,
};
use snapwake_deploy::Deploy;
use snapwake_sim::{SimConfig, SimControl, Simulator};
use snapwake_tests::*;

const TOOL_READY_DELAY: Duration = Duration::from_millis(300);
const POLL_INTERVAL: Duration = Duration::from_millis(100);

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn tool_writes(ctl: &SimControl) -> u64 {
    let c = ctl.counters();
    c.received("CreateTool") + c.received("UpdateTool")
}

async fn bench() {
    let sim = Simulator::start(SimConfig {
        tool_ready_delay: TOOL_READY_DELAY,
        ..SimConfig::default()
    })
    .await
    .expect("simulator");
    let ctl = sim.control();
    let limit = ctl.settings().2;
    assert_eq!(limit, Some(3), "the write throttle is on");
    let settings = DeploySettings {
        poll_interval: POLL_INTERVAL,
        finish_margin: Duration::from_millis(300),
        ..DeploySettings::default()
    };
    let f = Deploy {
        store: dynamo_store("bench-deploy").await,
        agentkit: client(&sim.endpoint()),
        writer: client(&sim.endpoint()).with_retry_policy(no_retry_policy()),
        catalogue: Catalogue::default_for(Some("Bench Studio")),
        settings,
    };
    let entries = f.catalogue.entries.len();

    let started = Instant::now();
    let first = f
        .run(
            DeployOptions::default(),
            Deadline::after(Duration::from_secs(120)),
        )
        .await
        .expect("first deploy");
    let first_took = started.elapsed();
    let counters = ctl.counters();
    let first_writes = tool_writes(&ctl);
    assert_eq!(first.count(EntryStatus::Created), entries, "{first:#?}");

    ctl.reset_counters();
    let started = Instant::now();
    let second = f
        .run(
            DeployOptions::default(),
            Deadline::after(Duration::from_secs(120)),
        )
        .await
        .expect("second deploy");
    let second_took = started.elapsed();
    let second_writes = tool_writes(&ctl);
    let second_reads = ctl
        .counters()
        .actions
        .values()
        .map(|a| a.received)
        .sum::<u64>();

    let budget =
        Duration::from_secs_f64(first.writes as f64 / 3.0) + TOOL_READY_DELAY + POLL_INTERVAL;
    println!("## Deploy of the {entries}-Tool catalogue\n");
    println!(
        "Simulated AgentKit with its Tool write throttle on ({} writes per sliding second), Tool \
         readiness delay {}, readiness poll interval {}; deploy lock and registry on DynamoDB \
         Local. The deploy function's `run`, from nothing, then again.\n",
        limit.unwrap_or_default(),
        ms(TOOL_READY_DELAY),
        ms(POLL_INTERVAL)
    );
    println!("| measure | value | budget |\n|---|---|---|");
    println!(
        "| first run: duration | {} | ≤ writes/3 s + readiness + one poll = {} |",
        ms(first_took),
        ms(budget)
    );
    println!(
        "| first run: Tool writes (CreateTool + UpdateTool) | {} ({} by the report) | |",
        first_writes, first.writes
    );
    println!(
        "| first run: max Tool writes in any one-second window | {} | ≤ 3 |",
        counters.max_tool_writes_per_second
    );
    println!(
        "| first run: 429s met (report; simulator throttle refusals) | {}; {} | |",
        first.throttles, counters.throttled
    );
    println!(
        "| first run: GetTool calls (readiness polls) | {} | |",
        counters.received("GetTool")
    );
    println!(
        "| first run: Tools created | {} of {entries} | |",
        first.count(EntryStatus::Created)
    );
    println!(
        "| second run: Tools unchanged | {} of {entries} | |",
        second.count(EntryStatus::Unchanged)
    );
    println!("| second run: Tool writes | {second_writes} | 0 |");
    println!(
        "| second run: duration ({second_reads} AgentKit reads) | {} | |",
        ms(second_took)
    );
    println!();
    let met = match first.throttles + counters.throttled {
        0 => "without meeting a single 429".to_string(),
        n => format!("meeting {n} 429s on the way"),
    };
    let again = match second_writes {
        0 => "finds every Tool by name and writes nothing".to_string(),
        n => format!("still wrote {n} times"),
    };
    println!(
        "The limiter paces the {} writes under the simulator's throttle {met}, and a second \
         run {again}.",
        first.writes
    );
    println!();
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let rt = multi_thread_runtime(2);
    rt.block_on(bench());
}
