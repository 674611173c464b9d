//! How a simulator starts: [`SimConfig`] and its defaults.

use std::time::Duration;

use crate::limits::RateLimits;
use snapwake::agentkit::Credentials;

use crate::state::DEFAULT_EXPIRY_SNAPSHOT_DELAY;

/// How a simulator starts.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The only credentials whose signatures verify.
    pub credentials: Credentials,
    /// Regions served; the first is the default region of seeded Tools.
    pub regions: Vec<String>,
    /// How long a new session stays `Creating` (simulated time).
    pub session_ready_delay: Duration,
    /// How long a new Tool stays `Creating` (simulated time).
    pub tool_ready_delay: Duration,
    /// How long the snapshot of an expired session stays `Creating` after the session's
    /// ExpireAt (simulated time).
    pub expiry_snapshot_delay: Duration,
    /// AgentKit's account-wide rate limits (default: the Tool writes only, 3 per second).
    pub rate_limits: RateLimits,
    /// Seeds the id and fault RNGs.
    pub seed: u64,
    /// Port on 127.0.0.1; 0 = any free port.
    pub port: u16,
}

impl Default for SimConfig {
    /// AK `sim-access-key` / SK `sim-secret-key`, regions `cn-beijing` and `cn-shanghai`,
    /// session and Tool delays 0, expiry snapshots 3 s, Tool writes 3/s and no other limit, seed 0, any port.
    fn default() -> Self {
        SimConfig {
            credentials: Credentials::new("sim-access-key", "sim-secret-key", None),
            regions: vec!["cn-beijing".into(), "cn-shanghai".into()],
            session_ready_delay: Duration::ZERO,
            tool_ready_delay: Duration::ZERO,
            expiry_snapshot_delay: DEFAULT_EXPIRY_SNAPSHOT_DELAY,
            rate_limits: RateLimits::tool_writes(),
            seed: 0,
            port: 0,
        }
    }
}
