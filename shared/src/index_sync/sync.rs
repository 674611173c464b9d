//! The sync alone over every Tool of a registry: list each, index its agents, record completion.

use serde::Serialize;

use super::listing::{agents_of, list_tool, tools, Seen, ToolListing};
use super::slices::SliceSettings;
use super::status::record_completion;
use super::upsert::{index_many, Upsert};
use crate::agentkit::AgentKit;
use crate::domain::{AgentKey, ToolRegistry};
use crate::invocation::Deadline;
use crate::store::AgentStore;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IndexSyncReport {
    pub seen: u64,
    pub indexed: u64,
    /// Records that already said everything (or are being deleted): not written.
    pub unchanged: u64,
    pub errors: u64,
    /// Every Tool read to its end and every record written: only then is completion recorded.
    pub completed: bool,
}

pub async fn sync_index<S: AgentStore, K: AgentKit>(
    store: &S,
    agentkit: &K,
    registry: &ToolRegistry,
    deadline: Deadline,
) -> IndexSyncReport {
    let mut report = IndexSyncReport::default();
    let mut synced = Vec::new();
    let mut complete = true;
    let mut work: Vec<(ToolListing, Vec<(AgentKey, Seen)>)> = Vec::new();
    for (kind, tool, retention) in tools(registry) {
        let slices = SliceSettings::default();
        match list_tool(
            agentkit,
            registry,
            (kind, &tool, retention),
            slices,
            deadline,
        )
        .await
        {
            Ok(listing) => {
                let agents = agents_of(&listing).into_iter().collect();
                work.push((listing.clone_empty(), agents));
                synced.push(tool);
            }
            // A Tool no region knows holds no agent.
            Err(e) if e.is_not_found() => synced.push(tool),
            Err(e) => {
                tracing::warn!(tool_id = %tool, error = %e, "index sync: cannot list the Tool");
                report.errors += 1;
                complete = false;
            }
        }
    }
    // One agent lives on one Tool; should it show up on two, the first (a snapshot Tool)
    // describes it.
    let mut keys = std::collections::BTreeSet::new();
    for (_, agents) in &mut work {
        agents.retain(|(key, _)| keys.insert(key.clone()));
    }
    report.seen = keys.len() as u64;

    let mut outcomes = Vec::new();
    for (listing, agents) in &work {
        outcomes.extend(index_many(store, listing, agents, deadline).await);
    }
    for outcome in outcomes {
        match outcome {
            Upsert::Written => report.indexed += 1,
            Upsert::Unchanged => report.unchanged += 1,
            Upsert::Failed => {
                report.errors += 1;
                complete = false;
            }
            Upsert::OutOfTime => complete = false,
        }
    }

    if complete {
        match record_completion(store, synced).await {
            Ok(()) => report.completed = true,
            Err(e) => {
                tracing::warn!(error = %e, "index sync: cannot record completion");
                report.errors += 1;
            }
        }
    }
    tracing::info!(
        seen = report.seen,
        indexed = report.indexed,
        unchanged = report.unchanged,
        errors = report.errors,
        completed = report.completed,
        "index sync"
    );
    report
}
