//! The delete function: `DELETE /v1/agents/{kind}/{agent_id}/snapshots/{snapshot_id}` and
//! `DELETE /v1/agents/{kind}/{agent_id}` (http-api.md), both answering 204.
//!
//! - [`deletion`]: the deletions themselves under the agent's lock — acquire as `deleting`,
//!   act on AgentKit idempotently, then one fenced write (resting state or tombstone). Every
//!   entry point of this function goes through it.
//! - `http`: the routes — authorise, read the record, find the agent's Tool, answer.
//!
//! - [`events`]: every invocation told apart by its shape — an HTTP request, the sweep's
//!   schedule, an offboarding event — and served;
//! - [`sweep`] (with [`retention`], the rule of what goes): index and prune every Tool;
//! - [`offboard`]: delete every agent of one owner.

use snapwake::agentkit::AgentKit;
use snapwake::identity::IdentityConfig;
use snapwake::registry::RegistryCache;
use snapwake::store::AgentStore;

pub mod deletion;
pub mod events;
mod http;
pub mod offboard;
pub mod retention;
pub mod sweep;

pub use deletion::{
    AgentPlace, DeleteSettings, DeleteTarget, Deleted, Deleter, SnapshotRef, TOMBSTONE_TTL_S,
};
pub use http::ROUTES;

/// The delete function's context: ports and settings built once per container.
pub struct Delete<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    /// The delete's lock timings and request budget.
    pub settings: DeleteSettings,
}

impl<S: AgentStore, K: AgentKit> Delete<S, K> {
    /// Deletions over this context's store and AgentKit.
    pub fn deleter(&self) -> Deleter<'_, S, K> {
        Deleter::new(&self.store, &self.agentkit, &self.settings)
    }
}
