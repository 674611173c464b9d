//! One simulated deployment (docs/testing.md, "One simulated deployment"): every function of
//! snapwake in one process on one simulated clock, a studio's weeks drawn from a seed, faults
//! at every step, and a reference model that checks as it goes what must hold. A failure
//! prints its seed and the last of what happened; `SNAPWAKE_SIM_SEED=<seed>` replays it.
//!
//! - `ci_seed_N`: the fixed set `.ci/run` runs, a simulated week each (a few minutes);
//! - `long_run` (ignored): `SNAPWAKE_SIM_AGENT_WEEKS` agent-weeks at least (default 10,000)
//!   over as many seeds as it takes, two at a time, and the counts of what they went through;
//! - `a_seed_replays_the_same_run` (ignored): one small seed twice, side by side, the same
//!   counts;
//! - `replay` (ignored): the one seed `SNAPWAKE_SIM_SEED` names.

use snapwake_tests::deployment::{run, Faults, Report, Settings};

/// The studio's deployment runs idle sleep at Daytona's default (docs/idle.md).
const IDLE_MINUTES: u32 = 15;

fn settings(seed: u64, weeks: u64) -> Settings {
    Settings {
        seed,
        people: 8,
        weeks,
        faults: Faults::On,
        // As a deployment whose Studio reports activity runs it (docs/idle.md).
        idle_minutes: IDLE_MINUTES,
    }
}

fn print(report: &Report) {
    eprintln!("{report:?}");
}

/// The fixed set `.ci/run` runs, one test each so that they run side by side: every seam the
/// simulation found is reached by at least one of them (docs/testing.md).
fn ci_seed(seed: u64) {
    match run(&settings(seed, 1)) {
        Ok(report) => print(&report),
        Err(failure) => panic!("{failure}"),
    }
}

#[test]
fn ci_seed_1() {
    ci_seed(1);
}

#[test]
fn ci_seed_2() {
    ci_seed(2);
}

/// The same seed replays the same run: two runs of one seed, side by side, agree on every count,
/// down to the number of AgentKit calls and of faults of each kind (the ids a run makes and its
/// retries' jitter are drawn from its seed: `snapwake::ambient`).
#[test]
#[ignore = "a minute and a half of both cores: run with the long run (docs/testing.md)"]
fn a_seed_replays_the_same_run() {
    let small = Settings {
        seed: 5,
        people: 3,
        weeks: 1,
        faults: Faults::On,
        idle_minutes: IDLE_MINUTES,
    };
    let (first, again) = std::thread::scope(|s| {
        let first = s.spawn(|| run(&small));
        let again = s.spawn(|| run(&small));
        (first.join(), again.join())
    });
    let report = |r: std::thread::Result<Result<Report, _>>| match r {
        Ok(Ok(report)) => format!("{report:?}"),
        Ok(Err(failure)) => panic!("{failure}"),
        Err(_) => panic!("a run panicked"),
    };
    let (first, again) = (report(first), report(again));
    assert_eq!(first, again, "two runs of seed 5 differ");
}

/// At least `SNAPWAKE_SIM_AGENT_WEEKS` (default 10,000) simulated agent-weeks, over seeds from
/// `SNAPWAKE_SIM_FIRST_SEED` (default 1000) on, `SNAPWAKE_SIM_WEEKS` (default 4) weeks each,
/// two seeds at a time; the totals of what they went through. Run with `--release`:
/// `cargo test --release -p snapwake-tests --test deployment -- --ignored long_run --nocapture`.
#[test]
#[ignore = "the long run: tens of minutes, run before landing (docs/testing.md)"]
fn long_run() {
    let var = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let wanted = var("SNAPWAKE_SIM_AGENT_WEEKS", 10_000) as f64;
    let first = var("SNAPWAKE_SIM_FIRST_SEED", 1000);
    let weeks = var("SNAPWAKE_SIM_WEEKS", 4);
    let started = std::time::Instant::now();
    let mut total = Report::default();
    let mut seeds = 0u64;
    let mut next = first;
    while total.agent_weeks < wanted {
        let pair = [next, next + 1];
        next += 2;
        let reports: Vec<Result<Report, String>> = std::thread::scope(|scope| {
            let runs: Vec<_> = pair
                .iter()
                .map(|&seed| {
                    scope.spawn(move || run(&settings(seed, weeks)).map_err(|f| f.to_string()))
                })
                .collect();
            runs.into_iter()
                .map(|r| r.join().unwrap_or_else(|_| Err("the run panicked".into())))
                .collect()
        });
        for report in reports {
            match report {
                Ok(report) => {
                    seeds += 1;
                    total.add(&report);
                }
                Err(failure) => panic!("{failure}"),
            }
        }
        eprintln!(
            "{seeds} seeds, {:.0} agent-weeks, {:?}",
            total.agent_weeks,
            started.elapsed()
        );
    }
    eprintln!(
        "long run: {seeds} seeds of {weeks} weeks, 0 violations, in {:?}",
        started.elapsed()
    );
    print(&total);
    assert!(
        total.agentkit_faults_by_kind.len() >= 5,
        "every AgentKit fault kind met: {total:?}"
    );
    for (what, count) in [
        ("outages", total.outages),
        ("table calls failed", total.table_failed),
        ("table answers lost", total.table_answers_lost),
        ("invocations stopped", total.stopped),
        ("offboardings", total.offboardings),
        ("bus refusals", total.bus_refusals),
    ] {
        assert!(count > 0, "no {what} in the long run: {total:?}");
    }
}

#[test]
#[ignore = "one seed, named by SNAPWAKE_SIM_SEED"]
fn replay() {
    let seed: u64 = std::env::var("SNAPWAKE_SIM_SEED")
        .expect("SNAPWAKE_SIM_SEED names the seed to replay")
        .parse()
        .expect("a seed is a number");
    let weeks = std::env::var("SNAPWAKE_SIM_WEEKS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(2);
    match run(&settings(seed, weeks)) {
        Ok(report) => print(&report),
        Err(failure) => panic!("{failure}"),
    }
}
