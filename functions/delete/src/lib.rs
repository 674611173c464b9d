//! The delete function: `DELETE /v1/agents/{kind}/{agent_id}/snapshots/{snapshot_id}` and
//! `DELETE /v1/agents/{kind}/{agent_id}` (docs/http-api.md), both answering 204.
//!
//! Its modules, each importing only those above it in this list (checked by
//! `shared/tests/layers.rs`):
//!
//! - `retention`: the rule of what goes (snapshots, idle agents), pure;
//! - `deletion`: the deletions themselves under the agent's lock — acquire as `deleting`,
//!   act on AgentKit idempotently, then one fenced write (resting state or tombstone). Every
//!   entry point of this function goes through it;
//! - `sweep`: index and prune every Tool (the hourly pass), and `sweep::refresh`, the minute
//!   refresh that keeps the owner index fresh in between;
//! - `offboard`: delete every agent of one owner, from configured sources only, and finish
//!   what an offboarding left;
//! - `http`: the routes — authorise, read the record, find the agent's Tool, answer;
//! - `settings`: the function's settings;
//! - `invocation`: every invocation told apart by its shape; `events`: each served.

use snapwake::identity::IdentityConfig;
use snapwake::registry_cache::RegistryCache;

mod retention;
mod deletion;
mod sweep;
mod offboard;
mod http;
mod settings;
mod invocation;
mod events;

// The public surface: the handler and its entry points, their settings and reports, and the
// routes. `classify` is public so that real AWS events (tests/fixtures) are checked against
// the very dispatch the function runs; the two constants are the table's contract with it.
pub use deletion::TOMBSTONE_TTL_S;
pub use http::ROUTES;
pub use invocation::{classify, Invocation};
pub use offboard::{FinishReport, OffboardProgress, OffboardReport, OffboardSettings, Outcome};
pub use retention::RetentionPolicy;
pub use settings::DeleteSettings;
pub use sweep::refresh::RefreshReport;
pub use sweep::{SweepProgress, SweepReport, SweepSettings, CHECKPOINT, LAST_PASS};

/// Progress that reports nothing (a Lambda logs its report at the end instead).
pub struct Quiet;
impl SweepProgress for Quiet {}
impl OffboardProgress for Quiet {}

/// The delete function's context: ports and settings built once per container.
/// The function's logical id in `infra/template.yaml`: its AWS calls are checked against that
/// function's policy (`snapwake::aws_calls`).
pub const FUNCTION: &str = "DeleteFunction";

pub struct Delete<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    /// The delete's lock timings and request budget.
    pub settings: DeleteSettings,
}
