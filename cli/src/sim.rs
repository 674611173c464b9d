//! `snapwake sim`: the AgentKit simulator as a standalone server on loopback, for trying a
//! client by hand or pointing `AGENTKIT_ENDPOINT` at it. Prints where it listens, then serves
//! until Ctrl-C.

use std::time::Duration;

use clap::Args;
use snapwake::agentkit::Credentials;
use snapwake_sim::{RateLimits, SimConfig, SimControl, Simulator, RATE_LIMITS_ENV};

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 9100)]
    port: u16,
    /// Access key requests must be signed with.
    #[arg(long, env = "VOLCENGINE_ACCESS_KEY", default_value = "sim-access-key")]
    access_key: String,
    /// Secret key requests must be signed with.
    #[arg(
        long,
        env = "VOLCENGINE_SECRET_KEY",
        default_value = "sim-secret-key",
        hide_env_values = true
    )]
    secret_key: String,
    /// Regions the simulated service knows, comma separated.
    #[arg(long, default_value = "cn-beijing,cn-shanghai", value_delimiter = ',')]
    regions: Vec<String>,
    /// How long a new or resumed session stays starting before it is Ready, in milliseconds.
    #[arg(long, default_value_t = 0)]
    session_ready_delay_ms: u64,
    /// How long a new Tool is Creating before it is Ready, in milliseconds.
    #[arg(long, default_value_t = 0)]
    tool_ready_delay_ms: u64,
    /// How long a snapshot taken on request (CreateSessionSnapshot) is Creating, in ms.
    #[arg(long, default_value_t = 0)]
    snapshot_ready_delay_ms: u64,
    #[command(flatten)]
    agentkit: SimulatedAgentKit,
}

/// AgentKit's own time and its rate limits, as a simulator started from the command line
/// keeps them (docs/agentkit.md, "The simulator"). Shared by `snapwake sim` and `snapwake
/// serve`.
#[derive(Debug, Args)]
pub struct SimulatedAgentKit {
    /// AgentKit's account-wide rate limits: `tools` (CreateTool+UpdateTool 3/s, nothing
    /// else), `agentkit` (every action, docs/agentkit.md) or `off`, then any `,Action=N` or
    /// `,Action=off`.
    #[arg(long, env = RATE_LIMITS_ENV, default_value = "tools", value_parser = snapwake_sim::parse_limits)]
    rate_limits: RateLimits,
    /// How long the snapshot of an expired session stays Creating after the session's
    /// ExpireAt, in milliseconds.
    #[arg(long, default_value_t = 3000)]
    expiry_snapshot_delay_ms: u64,
    /// How long after its session's ExpireAt that snapshot is missing from listings, in ms.
    #[arg(long, default_value_t = 0)]
    expiry_snapshot_hidden_ms: u64,
    /// The status that snapshot reaches after its delay (`Ready`, or `Failed` to try a
    /// snapshot that fails).
    #[arg(long, default_value = "Ready")]
    expiry_snapshot_outcome: String,
    /// How many of the next sessions started stay Starting forever.
    #[arg(long, default_value_t = 0)]
    stuck_sessions: u32,
}

impl SimulatedAgentKit {
    /// Set these on a running simulator.
    pub fn apply(&self, sim: &SimControl) {
        sim.set_expiry_snapshot_delay(Duration::from_millis(self.expiry_snapshot_delay_ms));
        sim.set_expiry_snapshot_hidden(Duration::from_millis(self.expiry_snapshot_hidden_ms));
        sim.set_expiry_snapshot_outcome(&self.expiry_snapshot_outcome);
        sim.set_stuck_sessions(self.stuck_sessions);
        sim.set_rate_limits(self.rate_limits.clone());
    }
}

pub fn run(args: SimArgs) -> Result<(), CliError> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(serve(args))
}

async fn serve(args: SimArgs) -> Result<(), CliError> {
    let config = SimConfig {
        credentials: Credentials::new(args.access_key.clone(), args.secret_key, None),
        regions: args.regions,
        session_ready_delay: Duration::from_millis(args.session_ready_delay_ms),
        tool_ready_delay: Duration::from_millis(args.tool_ready_delay_ms),
        port: args.port,
        ..SimConfig::default()
    };
    let sim = Simulator::start(config).await?;
    sim.control()
        .set_snapshot_ready_delay(Duration::from_millis(args.snapshot_ready_delay_ms));
    args.agentkit.apply(&sim.control());
    println!(
        "AgentKit simulator listening on {} (access key {}; control surface {}/_sim/)",
        sim.endpoint(),
        args.access_key,
        sim.endpoint()
    );
    // Whoever started us may be waiting for this line on a pipe.
    std::io::Write::flush(&mut std::io::stdout())?;
    sim.serve_until(async {
        // If Ctrl-C cannot be watched, serve until killed.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
    .await;
    eprintln!("simulator stopped");
    Ok(())
}
