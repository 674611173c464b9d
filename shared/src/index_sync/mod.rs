//! The index sync (docs/operations.md, "The owner index"): make sure every agent AgentKit
//! knows — with a snapshot on a snapshot Tool, or a live session on any Tool — has an agent
//! record carrying its owner key, owner, display name, Tool, region, retention and
//! `created_at`, its snapshot summaries, and (for an agent at rest) its live session. Then
//! `GET /v1/agents` for one owner is a query of the owner index plus one exact AgentKit call
//! per agent, and an admin's page of everyone is read from the table alone. Once a full sync
//! has completed it records so in the [`INDEX_DOCUMENT`]; the list function trusts the index
//! only then (and only for the Tools that sync covered).
//!
//! Writes are conditional only: a record is read first, then created with
//! [`Condition::Absent`] or filled with `Version(seen)`. Only descriptive fields that are
//! missing are written (what snapwake already recorded, e.g. the owner a create wrote, wins);
//! the snapshot summaries are replaced when they differ; a live session is written only on a
//! record at rest (asleep, failed, awake with another session, or none) and never while a
//! lock is held; deleted agents are left alone. A record that already says everything is not
//! written at all, so a second sync writes nothing.
//!
//! The `Username` metadata of a snapshot or session is taken as the agent's raw owner only
//! when the UserSessionId agrees ([`crate::identity::belongs_to`]): metadata is free text
//! another system may have written, and a record's owner grants access.
//!
//! The retention sweep (the delete function) lists each Tool once with [`list_tool`] and
//! indexes its agents with [`index_agent`] before pruning them; [`sync_index`] is the sync
//! alone over every Tool.

mod freshness;
mod listing;
mod slices;
mod upsert;

pub use freshness::{freshness, save_freshness, Freshness, ToolMark, REFRESH_DOCUMENT};
pub use listing::{agent_of, agents_of, list_tool, tools, Seen, ToolListing};
pub use slices::{snapshots_between, SliceSettings, SlicedRead, ORIGIN_S};
pub(crate) use upsert::learned_end;
pub use upsert::{index_agent, index_located, index_many, Upsert};

use std::collections::{BTreeMap, HashMap};

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::agentkit::types::{metadata_value, ListSessions, Session, Snapshot, MAX_PAGE_SIZE};
use crate::agentkit::{AgentKit, AgentKitError, Pager};
use crate::deadline::Deadline;
use crate::domain::Description;
use crate::domain::{AgentKey, AgentRecord, Kind, Retention, ToolRegistry, WakeState};
use crate::identity::names::METADATA_DISPLAY_NAME_KEY;
use crate::identity::{belongs_to, UserSessionId};
use crate::identity::{user_session_id, SNAPSHOT_AGENT_PREFIX};
use crate::locate::regions;
use crate::lock::LockSettings;
use crate::store::{AgentStore, Changes, Condition, DocumentKey, StoreError, GET_MANY_KEYS};
use crate::timestamp::now_ms;
use crate::timestamp::sort_key;
use crate::view::{snapshot_views, METADATA_CREATOR_KEY, METADATA_OWNER_KEY};

/// Where the completion of the last full sync is recorded.
pub const INDEX_DOCUMENT: DocumentKey<'static> = DocumentKey {
    pk: "SWEEP",
    sk: "INDEX",
};

/// Most pages read from one snapshot Tool (100 snapshots each): a listing longer than this is
/// an error rather than a Lambda's whole budget.
pub const MAX_SYNC_PAGES: usize = 10_000;

/// How many records are read and written at once.
const WRITE_CONCURRENCY: usize = 16;

/// How many times a lost race on one record is retried.
const MAX_ROUNDS: usize = 3;

/// What the [`INDEX_DOCUMENT`] holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexStatus {
    /// When the last full sync completed (epoch ms).
    pub completed_at_ms: u64,
    /// The snapshot Tools that sync read to their end.
    #[serde(default)]
    pub tools: Vec<String>,
}

impl IndexStatus {
    /// Whether the sync covered every snapshot Tool of `kinds` in `registry`.
    pub fn covers(&self, registry: &ToolRegistry, kinds: &[Kind]) -> bool {
        kinds.iter().all(|k| {
            registry.kind(*k).is_none_or(|t| {
                t.snapshot_tools()
                    .all(|id| self.tools.iter().any(|s| s == id))
            })
        })
    }
}

/// The recorded status of the last completed sync, if any.
pub async fn index_status<S: AgentStore>(store: &S) -> Result<Option<IndexStatus>, StoreError> {
    Ok(store
        .get_document(INDEX_DOCUMENT)
        .await?
        .and_then(|d| serde_json::from_value(d.value).ok()))
}

/// What one sync did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IndexSyncReport {
    /// Agents seen on the Tools (with a snapshot or a live session).
    pub seen: u64,
    /// Records created or filled in.
    pub indexed: u64,
    /// Records that already said everything (or are being deleted): not written.
    pub unchanged: u64,
    /// Tools that could not be listed, and records that could not be written.
    pub errors: u64,
    /// Whether every Tool was read to its end and every record written: only then is the
    /// completion recorded.
    pub completed: bool,
}

/// Sync the owner index from every Tool of `registry`, within `deadline`.
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

/// Record that a full sync covered `tools`.
pub async fn record_completion<S: AgentStore>(
    store: &S,
    tools: Vec<String>,
) -> Result<(), StoreError> {
    let status = IndexStatus {
        completed_at_ms: now_ms(),
        tools,
    };
    let value = serde_json::to_value(&status).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let mut version = store
        .get_document(INDEX_DOCUMENT)
        .await?
        .map_or(0, |d| d.version);
    for _ in 0..MAX_ROUNDS {
        match store
            .put_document(INDEX_DOCUMENT, &value, version, None)
            .await
        {
            Ok(_) => return Ok(()),
            Err(StoreError::DocumentConflict { current }) => {
                version = current.map_or(0, |d| d.version)
            }
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Unavailable(
        "the index document kept changing".into(),
    ))
}

#[cfg(test)]
mod tests;
