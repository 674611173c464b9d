//! The create function as it is built once per container: its ports, its settings and their
//! defaults, and the name its AWS calls are checked under.

use std::time::Duration;

use snapwake::domain::OpenUrl;
use snapwake::identity::IdentityConfig;
use snapwake::locate::RegistryCache;
use snapwake::lock::LockSettings;

/// The function's logical id in `infra/template.yaml`: its AWS calls are checked against that
/// function's policy (`snapwake::aws_calls`).
pub const FUNCTION: &str = "CreateFunction";

/// Longest time one create works by default (AgentKit calls and retries included).
pub const CREATE_BUDGET: Duration = Duration::from_secs(20);
/// By default, a `running` idempotency document older than this belongs to an invocation
/// that died.
pub const STALE_RUNNING: Duration = Duration::from_secs(60);

/// `Retry-After` of a 202 for an unsettled CreateSession: a listing a few seconds later may
/// show the session.
pub const UNSETTLED_RETRY_AFTER_S: u64 = 2;
/// By default, how long a CreateSession whose answer was lost may still take effect
/// (`SNAPWAKE_READY_TIMEOUT_S`, the wake's readiness timeout).
pub const UNSETTLED_WINDOW: Duration = Duration::from_secs(360);

/// Timing of the create. `budget` must stay well below `stale_running` and the lock's lease
/// (crate docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateSettings {
    /// Longest time one create works; further cut to the Lambda's remaining time.
    pub budget: Duration,
    /// Age after which a `running` idempotency document may be taken over.
    pub stale_running: Duration,
    /// The agent's lock, held as `creating` around CreateSession (lease 30 s: the budget and a
    /// margin, below `stale_running`).
    pub lock: LockSettings,
    /// How long after `create_sent_at` a CreateSession whose answer was lost may still take
    /// effect: until then an empty listing is no proof, and no second CreateSession is sent
    /// for the agent (the wake settings' `ready_timeout`).
    pub unsettled_window: Duration,
    /// The deployment's open link (`SNAPWAKE_OPEN_URL`), which the new agent's view carries.
    pub open_url: Option<OpenUrl>,
    /// Idle sleep (`SNAPWAKE_IDLE_MINUTES`): a new agent is idle an idle time after its create.
    pub idle: snapwake::wake::IdlePolicy,
}

impl Default for CreateSettings {
    fn default() -> Self {
        CreateSettings {
            budget: CREATE_BUDGET,
            stale_running: STALE_RUNNING,
            // Covers the whole budget, and ends well before a stale attempt may be taken over.
            lock: LockSettings {
                lease: Duration::from_secs(30),
                ..LockSettings::default()
            },
            unsettled_window: UNSETTLED_WINDOW,
            open_url: None,
            idle: snapwake::wake::IdlePolicy::default(),
        }
    }
}
/// The create function's context: ports and settings built once per container.
pub struct Create<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    pub settings: CreateSettings,
}
