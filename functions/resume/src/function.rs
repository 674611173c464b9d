//! The resume function as it is built once per container (its ports and settings), and the
//! name its AWS calls are checked under.

use snapwake::fanout::Fanout;
use snapwake::identity::IdentityConfig;
use snapwake::locate::RegistryCache;
use snapwake::schedule::ScheduleRules;
use snapwake::wake::WakeSettings;

/// The function's logical id in `infra/template.yaml`: its AWS calls are checked against that
/// function's policy (`snapwake::aws_calls`).
pub const FUNCTION: &str = "ResumeFunction";

/// The resume function's context: ports and settings built once per container.
pub struct Resume<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    /// Wake, sleep and keepalive timings.
    pub wake: WakeSettings,
    /// What a schedule may ask for.
    pub schedules: ScheduleRules,
    /// Where the tick hands due occurrences.
    pub fanout: Fanout,
}
