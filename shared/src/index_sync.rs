//! The index sync (cleanup.md, "Backfill the owner index"): make sure every agent that has a
//! snapshot on a snapshot Tool has an agent record carrying its owner key, owner, display name,
//! Tool, region, retention and `created_at`, so that `GET /v1/agents` for one owner is a query
//! of the owner index plus one exact AgentKit call per agent instead of a scan of every
//! snapshot. Once a full sync has completed it records so in the [`INDEX_DOCUMENT`]; the list
//! function trusts the index only then (and only for the Tools that sync covered).
//!
//! Writes are conditional only: a record is read first, then created with
//! [`Condition::Absent`] or filled with `Version(seen)`. Only descriptive fields that are
//! missing are written (what snapwake already recorded, e.g. the owner a create wrote, wins);
//! wake fields are never touched, and records in `deleting` or `gone` are left alone. A record
//! that already has everything is not written at all, so a second sync writes nothing.
//!
//! The `Username` metadata of a snapshot is taken as the agent's raw owner only when the
//! UserSessionId agrees ([`crate::identity::belongs_to`]): metadata is free text another system
//! may have written, and a record's owner grants access.
//!
//! The retention sweep runs this on schedule; `snapwake serve --demo` runs it at start.

use std::collections::BTreeMap;

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::agentkit::types::{metadata_value, ListSessionSnapshots, Snapshot, MAX_PAGE_SIZE};
use crate::agentkit::{AgentKit, AgentKitError, Pager};
use crate::deadline::Deadline;
use crate::domain::{AgentKey, AgentRecord, Kind, Retention, ToolRegistry, WakeState};
use crate::identity::names::METADATA_DISPLAY_NAME_KEY;
use crate::identity::{belongs_to, UserSessionId};
use crate::locate::{regions, user_session_id, SNAPSHOT_AGENT_PREFIX};
use crate::store::{now_ms, AgentStore, Changes, Condition, Description, DocumentKey, StoreError};
use crate::view::METADATA_OWNER_KEY;

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
    /// Agents seen on the snapshot Tools.
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

/// What the snapshots of one agent say about it.
#[derive(Clone, Debug, Default)]
struct Seen {
    tool_id: String,
    region: String,
    /// The oldest snapshot's CreatedAt (stable, so `gsi1sk` is too).
    oldest: Option<String>,
    /// `(CreatedAt, name)` of the newest snapshot that carries a display name.
    name: Option<(String, String)>,
    owner: Option<String>,
}

/// Sync the owner index from every snapshot Tool of `registry`, within `deadline`.
pub async fn sync_index<S: AgentStore, K: AgentKit>(
    store: &S,
    agentkit: &K,
    registry: &ToolRegistry,
    deadline: Deadline,
) -> IndexSyncReport {
    let mut report = IndexSyncReport::default();
    let mut agents: BTreeMap<AgentKey, Seen> = BTreeMap::new();
    let mut synced_tools = Vec::new();
    let mut complete = true;
    for kind in Kind::ALL {
        let Some(tools) = registry.kind(kind) else {
            continue;
        };
        for tool in tools.snapshot_tools() {
            match read_tool(agentkit, registry, kind, tool, deadline, &mut agents).await {
                Ok(()) => synced_tools.push(tool.to_string()),
                Err(e) => {
                    tracing::warn!(tool_id = tool, error = %e, "index sync: cannot list snapshots");
                    report.errors += 1;
                    complete = false;
                }
            }
        }
    }
    report.seen = agents.len() as u64;

    let outcomes: Vec<Upsert> = futures::stream::iter(agents)
        .map(|(key, seen)| async move {
            if deadline.is_past() {
                return Upsert::OutOfTime;
            }
            upsert(store, &key, &seen).await
        })
        .buffer_unordered(WRITE_CONCURRENCY)
        .collect()
        .await;
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
        match record_completion(store, synced_tools).await {
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

/// Read every snapshot of one Tool into `agents`. The Tool lives in one region: the first
/// region that knows it.
async fn read_tool<K: AgentKit>(
    agentkit: &K,
    registry: &ToolRegistry,
    kind: Kind,
    tool: &str,
    deadline: Deadline,
    agents: &mut BTreeMap<AgentKey, Seen>,
) -> Result<(), AgentKitError> {
    let mut last = None;
    for region in regions(registry, agentkit) {
        let request = ListSessionSnapshots {
            tool_id: tool.to_string(),
            max_results: Some(MAX_PAGE_SIZE),
            ..ListSessionSnapshots::default()
        };
        let mut pager = Pager::new(agentkit, region, request, MAX_SYNC_PAGES);
        let mut first = true;
        loop {
            match pager.next_page(deadline).await {
                Ok(Some(page)) => {
                    first = false;
                    for snapshot in &page {
                        note(agents, kind, tool, region, snapshot);
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) if first && e.is_not_found() => {
                    last = Some(e);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Err(last.unwrap_or(AgentKitError::NotFound {
        action: "ListSessionSnapshots",
        message: "no region configured".into(),
    }))
}

/// The agent a snapshot belongs to: its UserSessionId, else `snapshot-<SnapshotId>`.
pub fn agent_of(kind: Kind, snapshot: &Snapshot) -> Option<AgentKey> {
    match snapshot
        .user_session_id
        .as_deref()
        .filter(|u| !u.is_empty())
    {
        Some(usid) if !usid.starts_with(SNAPSHOT_AGENT_PREFIX) => Some(AgentKey::new(kind, usid)),
        // An id that would read as a `snapshot-` agent cannot be told apart from one: skip it.
        Some(_) => None,
        None => snapshot
            .snapshot_id
            .as_deref()
            .map(|id| AgentKey::new(kind, format!("{SNAPSHOT_AGENT_PREFIX}{id}"))),
    }
}

fn note(
    agents: &mut BTreeMap<AgentKey, Seen>,
    kind: Kind,
    tool: &str,
    region: &str,
    snapshot: &Snapshot,
) {
    let Some(key) = agent_of(kind, snapshot) else {
        return;
    };
    let seen = agents.entry(key.clone()).or_insert_with(|| Seen {
        tool_id: tool.to_string(),
        region: region.to_string(),
        ..Seen::default()
    });
    // One agent lives on one Tool; should it show up on two, the first (recoverable) wins.
    if seen.tool_id != tool {
        return;
    }
    let at = snapshot.created_at.clone().unwrap_or_default();
    if !at.is_empty() && seen.oldest.as_ref().is_none_or(|o| at < *o) {
        seen.oldest = Some(at.clone());
    }
    if let Some(name) = metadata_value(&snapshot.session_metadata, METADATA_DISPLAY_NAME_KEY)
        .filter(|n| !n.trim().is_empty())
    {
        if seen.name.as_ref().is_none_or(|(t, _)| at >= *t) {
            seen.name = Some((at, name.to_string()));
        }
    }
    if seen.owner.is_none() {
        seen.owner = metadata_value(&snapshot.session_metadata, METADATA_OWNER_KEY)
            .filter(|o| user_session_id(&key.agent_id).is_some_and(|id| belongs_to(id, o)))
            .map(str::to_string);
    }
}

/// The descriptive fields the snapshots say an agent should have.
fn wanted(key: &AgentKey, seen: &Seen) -> Description {
    let parsed = user_session_id(&key.agent_id).map(UserSessionId::parse);
    let legacy_name = parsed
        .as_ref()
        .and_then(UserSessionId::legacy_name)
        .filter(|n| !n.trim().is_empty())
        .map(str::to_string);
    Description {
        owner: seen.owner.clone(),
        owner_key: parsed.as_ref().and_then(UserSessionId::owner_key),
        display_name: seen.name.as_ref().map(|(_, n)| n.clone()).or(legacy_name),
        created_by: None,
        retention: Some(Retention::Recoverable),
        tool_id: Some(seen.tool_id.clone()),
        region: Some(seen.region.clone()),
        created_at: seen.oldest.clone(),
    }
}

/// The fields of `want` that `record` lacks (`None`: nothing to write).
fn missing(record: &AgentRecord, want: &Description) -> Option<Description> {
    fn fill<T: Clone>(have: &Option<T>, want: &Option<T>) -> Option<T> {
        if have.is_none() {
            want.clone()
        } else {
            None
        }
    }
    let d = Description {
        owner: fill(&record.owner, &want.owner),
        owner_key: fill(&record.owner_key, &want.owner_key),
        display_name: fill(&record.display_name, &want.display_name),
        created_by: None,
        retention: fill(&record.retention, &want.retention),
        tool_id: fill(&record.tool_id, &want.tool_id),
        region: fill(&record.region, &want.region),
        created_at: fill(&record.created_at, &want.created_at),
    };
    (d != Description::default()).then_some(d)
}

enum Upsert {
    Written,
    Unchanged,
    Failed,
    OutOfTime,
}

async fn upsert<S: AgentStore>(store: &S, key: &AgentKey, seen: &Seen) -> Upsert {
    let want = wanted(key, seen);
    let mut current = match store.get(key).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(agent = %key, error = %e, "index sync: cannot read record");
            return Upsert::Failed;
        }
    };
    for _ in 0..MAX_ROUNDS {
        let (condition, describe) = match &current {
            None => (Condition::Absent, want.clone()),
            Some(r) if matches!(r.state, WakeState::Deleting | WakeState::Gone) => {
                return Upsert::Unchanged
            }
            Some(r) => match missing(r, &want) {
                Some(d) => (Condition::Version(r.version), d),
                None => return Upsert::Unchanged,
            },
        };
        let changes = Changes {
            describe: Some(describe),
            ..Changes::default()
        };
        match store.update(key, &condition, &changes).await {
            Ok(_) => return Upsert::Written,
            Err(StoreError::ConditionFailed { current: c }) => current = c.map(|b| *b),
            Err(e) => {
                tracing::warn!(agent = %key, error = %e, "index sync: cannot write record");
                return Upsert::Failed;
            }
        }
    }
    Upsert::Failed
}

async fn record_completion<S: AgentStore>(store: &S, tools: Vec<String>) -> Result<(), StoreError> {
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
mod tests {
    use super::*;
    use crate::agentkit::types::MetadataEntry;

    fn snap(usid: Option<&str>, at: &str, meta: &[(&str, &str)]) -> Snapshot {
        Snapshot {
            snapshot_id: Some(format!("snap-{at}")),
            user_session_id: usid.map(str::to_string),
            created_at: Some(at.into()),
            session_metadata: meta
                .iter()
                .map(|(k, v)| MetadataEntry::string(*k, *v))
                .collect(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn agents_take_the_oldest_time_the_newest_name_and_only_a_matching_owner() {
        let mut agents = BTreeMap::new();
        let id = "studio-alice-0123";
        for s in [
            snap(
                Some(id),
                "2026-12-02T00:00:00Z",
                &[("veadk_display_name", "New")],
            ),
            snap(
                Some(id),
                "2026-12-01T00:00:00Z",
                &[("veadk_display_name", "Old")],
            ),
            snap(Some(id), "2026-12-03T00:00:00Z", &[("Username", "mallory")]),
            snap(Some(id), "2026-12-04T00:00:00Z", &[("Username", "alice")]),
            snap(None, "2026-12-05T00:00:00Z", &[]),
        ] {
            note(&mut agents, Kind::Codex, "t-1", "r", &s);
        }
        let key = AgentKey::new(Kind::Codex, id);
        let d = wanted(&key, &agents[&key]);
        assert_eq!(d.created_at.as_deref(), Some("2026-12-01T00:00:00Z"));
        assert_eq!(d.display_name.as_deref(), Some("New"));
        assert_eq!(
            d.owner.as_deref(),
            Some("alice"),
            "mallory's claim is ignored"
        );
        assert_eq!(d.owner_key.as_deref(), Some("studio-alice"));
        let ownerless = AgentKey::new(Kind::Codex, "snapshot-snap-2026-12-05T00:00:00Z");
        assert!(wanted(&ownerless, &agents[&ownerless]).owner_key.is_none());
    }

    #[test]
    fn only_missing_fields_are_filled() {
        let key = AgentKey::new(Kind::Codex, "studio-alice-0123");
        let mut r = AgentRecord::absent(key);
        r.owner = Some("alice".into());
        r.display_name = Some("Mine".into());
        let want = Description {
            owner: Some("alice".into()),
            display_name: Some("Theirs".into()),
            tool_id: Some("t".into()),
            ..Description::default()
        };
        let d = missing(&r, &want).unwrap();
        assert_eq!(d.tool_id.as_deref(), Some("t"));
        assert!(d.display_name.is_none() && d.owner.is_none());
        r.tool_id = Some("t".into());
        assert!(missing(&r, &want).is_none());
    }
}
