//! The delete function: `DELETE /v1/agents/{kind}/{agent_id}/snapshots/{snapshot_id}` and
//! `DELETE /v1/agents/{kind}/{agent_id}` (docs/http-api.md), both answering 204.
//!
//! - `deletion`: the deletions themselves under the agent's lock — acquire as `deleting`,
//!   act on AgentKit idempotently, then one fenced write (resting state or tombstone). Every
//!   entry point of this function goes through it.
//! - `http`: the routes — authorise, read the record, find the agent's Tool, answer.
//!
//! - `events`: every invocation told apart by its shape — an HTTP request, the sweep's
//!   schedule, an offboarding event — and served;
//! - `sweep` (with `retention`, the rule of what goes): index and prune every Tool;
//! - `offboard`: delete every agent of one owner.

use snapwake::identity::IdentityConfig;
use snapwake::registry_cache::RegistryCache;

mod deletion;
mod events;
mod http;
mod offboard;
mod retention;
mod sweep;

// The public surface: the handler and its entry points, their settings and reports, and the
// routes. `classify` is public so that real AWS events (tests/fixtures) are checked against
// the very dispatch the function runs; the two constants are the table's contract with it.
pub use deletion::{DeleteSettings, TOMBSTONE_TTL_S};
pub use events::{classify, Invocation};
pub use http::ROUTES;
pub use offboard::{OffboardProgress, OffboardReport, Outcome};
pub use retention::RetentionPolicy;
pub use sweep::{SweepProgress, SweepReport, SweepSettings, CHECKPOINT};

/// Progress that reports nothing (a Lambda logs its report at the end instead).
pub struct Quiet;
impl SweepProgress for Quiet {}
impl OffboardProgress for Quiet {}

/// The delete function's context: ports and settings built once per container.
pub struct Delete<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    /// The delete's lock timings and request budget.
    pub settings: DeleteSettings,
}
