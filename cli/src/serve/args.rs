//! What `snapwake serve` is asked for: its flags, and the settings they decide.

use std::time::Duration;

use clap::Args;
use snapwake::config::Config;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1.
    #[arg(long, default_value_t = 8080)]
    pub(super) port: u16,
    /// Seed the simulator with demo agents of a few owners.
    #[arg(long)]
    pub(super) demo: bool,
    /// How long a resumed session of the embedded simulator takes to become Ready, in ms.
    #[arg(long, default_value_t = 1500)]
    pub(super) session_ready_delay_ms: u64,
    /// How long a snapshot the embedded simulator takes on request (a sleep) stays Creating,
    /// in ms.
    #[arg(long, default_value_t = 1000)]
    pub(super) snapshot_ready_delay_ms: u64,
    /// Run the retention sweep (index and prune) this often, as the deployed schedule does;
    /// it also runs once at start. `0s` turns the schedule off.
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    pub(super) sweep_every: Duration,
    /// Tick the schedules this often (deployed: every minute, at its start; so does this by
    /// default). Each tick acts at the minute it falls in, so ticking more often only repeats
    /// ticks, which change nothing: a quicker demo after moving the simulator's clock. `0s`
    /// turns ticking off.
    #[arg(long, default_value = "1m", value_parser = humantime::parse_duration)]
    pub(super) tick_every: Duration,
    /// Put an awake agent nobody used for this many minutes to sleep (docs/idle.md); 0: off.
    /// Default: `SNAPWAKE_IDLE_MINUTES`, else off, and 30 with `--demo`.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=10080))]
    pub(super) idle_minutes: Option<u32>,
    /// AgentKit's own time and rate limits in the embedded simulator.
    #[command(flatten)]
    pub(super) agentkit: crate::sim::SimulatedAgentKit,
}

/// The idle time `serve --demo` runs with, unless told otherwise (docs/idle.md).
const DEMO_IDLE_MINUTES: u32 = 30;

/// Idle sleep as asked: `--idle-minutes`, else the environment's, else 30 minutes with
/// `--demo` (its simulated Studio is all there is to report use), else off.
pub(super) fn idle_policy(args: &ServeArgs, config: &Config) -> snapwake::wake::IdlePolicy {
    let from_env = config.wake.idle.default_minutes;
    let default_minutes = match args.idle_minutes {
        Some(minutes) => minutes,
        None if from_env == 0 && args.demo => DEMO_IDLE_MINUTES,
        None => from_env,
    };
    snapwake::wake::IdlePolicy { default_minutes }
}
