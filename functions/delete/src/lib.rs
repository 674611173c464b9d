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
//! - `settings`: the function's settings; `function`: what it is built with, and its name;
//! - `http`: the routes — authorise, read the record, find the agent's Tool, answer;
//! - `invocation`: every invocation told apart by its shape; `events`: each served.

mod retention;
mod deletion;
mod sweep;
mod offboard;
mod settings;
mod function;
mod http;
mod invocation;
mod events;

// The public surface: the handler and its entry points, their settings and reports, and the
// routes. `classify` is public so that real AWS events (tests/fixtures) are checked against
// the very dispatch the function runs; the two constants are the table's contract with it.
pub use deletion::TOMBSTONE_TTL_S;
pub use function::{Delete, Quiet, FUNCTION};
pub use http::ROUTES;
pub use invocation::{classify, Invocation};
pub use offboard::{FinishReport, OffboardProgress, OffboardReport, OffboardSettings, Outcome};
pub use retention::RetentionPolicy;
pub use settings::DeleteSettings;
pub use sweep::refresh::RefreshReport;
pub use sweep::{SweepProgress, SweepReport, SweepSettings, CHECKPOINT, LAST_PASS};
