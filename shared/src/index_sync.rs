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

use std::collections::BTreeMap;

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::agentkit::types::{
    metadata_value, ListSessionSnapshots, ListSessions, Session, Snapshot, MAX_PAGE_SIZE,
};
use crate::agentkit::{AgentKit, AgentKitError, Pager};
use crate::deadline::Deadline;
use crate::domain::Description;
use crate::domain::{AgentKey, AgentRecord, Kind, Retention, ToolRegistry, WakeState};
use crate::identity::names::METADATA_DISPLAY_NAME_KEY;
use crate::identity::{belongs_to, UserSessionId};
use crate::identity::{user_session_id, SNAPSHOT_AGENT_PREFIX};
use crate::locate::regions;
use crate::lock::LockSettings;
use crate::store::{AgentStore, Changes, Condition, DocumentKey, StoreError};
use crate::timestamp::now_ms;
use crate::timestamp::sort_key;
use crate::view::{snapshot_views, METADATA_OWNER_KEY};

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

/// Everything one Tool holds: its snapshots (a snapshot Tool) and its sessions, any status.
#[derive(Clone, Debug)]
pub struct ToolListing {
    pub kind: Kind,
    pub tool_id: String,
    /// The region that knows the Tool.
    pub region: String,
    pub retention: Retention,
    pub snapshots: Vec<Snapshot>,
    pub sessions: Vec<Session>,
    /// When the listing began (epoch ms): a record written since knows better than it.
    pub listed_at_ms: u64,
}

/// Every Tool of every kind, snapshot Tools first, each once: `(kind, tool, retention)`.
pub fn tools(registry: &ToolRegistry) -> Vec<(Kind, String, Retention)> {
    let mut out: Vec<(Kind, String, Retention)> = Vec::new();
    for kind in Kind::ALL {
        let Some(tools) = registry.kind(kind) else {
            continue;
        };
        let snapshot = tools.snapshot_tools().map(|t| (t, Retention::Recoverable));
        let temporary = tools
            .temporary
            .as_deref()
            .map(|t| (t, Retention::Temporary));
        for (tool, retention) in snapshot.chain(temporary) {
            if !out.iter().any(|(k, t, _)| *k == kind && t == tool) {
                out.push((kind, tool.to_string(), retention));
            }
        }
    }
    out
}

/// List one Tool to its end: its snapshots (when it is a snapshot Tool) and its sessions, in
/// the first region that knows it. `InvalidResource.NotFound` in every region is an error the
/// caller may read as "no such Tool".
pub async fn list_tool<K: AgentKit>(
    agentkit: &K,
    registry: &ToolRegistry,
    (kind, tool, retention): (Kind, &str, Retention),
    deadline: Deadline,
) -> Result<ToolListing, AgentKitError> {
    let mut last = None;
    let listed_at_ms = now_ms();
    for region in regions(registry, agentkit) {
        let snapshots = if retention == Retention::Recoverable {
            let request = ListSessionSnapshots {
                tool_id: tool.to_string(),
                max_results: Some(MAX_PAGE_SIZE),
                ..ListSessionSnapshots::default()
            };
            match all_pages(agentkit, region, request, deadline).await {
                Ok(s) => s,
                Err(e) if e.is_not_found() => {
                    last = Some(e);
                    continue;
                }
                Err(e) => return Err(e),
            }
        } else {
            Vec::new()
        };
        let request = ListSessions {
            tool_id: tool.to_string(),
            max_results: Some(MAX_PAGE_SIZE),
            ..ListSessions::default()
        };
        let sessions = match all_pages(agentkit, region, request, deadline).await {
            Ok(s) => s,
            Err(e) if e.is_not_found() && snapshots.is_empty() => {
                last = Some(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        return Ok(ToolListing {
            kind,
            tool_id: tool.to_string(),
            region: region.to_string(),
            retention,
            snapshots,
            sessions,
            listed_at_ms,
        });
    }
    Err(last.unwrap_or(AgentKitError::NotFound {
        action: "ListSessions",
        message: "no region configured".into(),
    }))
}

async fn all_pages<K: AgentKit, A: crate::agentkit::Paged>(
    agentkit: &K,
    region: &str,
    request: A,
    deadline: Deadline,
) -> Result<Vec<A::Item>, AgentKitError> {
    let mut pager = Pager::new(agentkit, region, request, MAX_SYNC_PAGES);
    let mut all = Vec::new();
    while let Some(page) = pager.next_page(deadline).await? {
        all.extend(page);
    }
    Ok(all)
}

/// What one Tool's listing says about one agent.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// Its snapshots (any status).
    pub snapshots: Vec<Snapshot>,
    /// Its active sessions.
    pub sessions: Vec<Session>,
}

/// The agents of a listing: snapshots by UserSessionId (or `snapshot-<id>`), active sessions
/// by UserSessionId (a session without one belongs to no agent a listing can name).
pub fn agents_of(listing: &ToolListing) -> BTreeMap<AgentKey, Seen> {
    let mut agents: BTreeMap<AgentKey, Seen> = BTreeMap::new();
    for snapshot in &listing.snapshots {
        if let Some(key) = agent_of(listing.kind, snapshot) {
            agents
                .entry(key)
                .or_default()
                .snapshots
                .push(snapshot.clone());
        }
    }
    for session in listing.sessions.iter().filter(|s| s.is_active()) {
        let Some(usid) = session
            .user_session_id
            .as_deref()
            .filter(|u| !u.is_empty() && user_session_id(u).is_some())
        else {
            continue;
        };
        agents
            .entry(AgentKey::new(listing.kind, usid))
            .or_default()
            .sessions
            .push(session.clone());
    }
    agents
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
    let mut work: Vec<(AgentKey, Seen, ToolListing)> = Vec::new();
    for (kind, tool, retention) in tools(registry) {
        match list_tool(agentkit, registry, (kind, &tool, retention), deadline).await {
            Ok(listing) => {
                for (key, seen) in agents_of(&listing) {
                    work.push((key, seen, listing.clone_empty()));
                }
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
    work.retain(|(key, _, _)| keys.insert(key.clone()));
    report.seen = work.len() as u64;

    let outcomes: Vec<Upsert> = futures::stream::iter(work)
        .map(|(key, seen, listing)| async move {
            if deadline.is_past() {
                return Upsert::OutOfTime;
            }
            index_agent(store, &key, &listing, &seen).await
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

impl ToolListing {
    /// The Tool alone, without its items (what indexing one agent needs to know of it).
    pub fn clone_empty(&self) -> ToolListing {
        ToolListing {
            kind: self.kind,
            tool_id: self.tool_id.clone(),
            region: self.region.clone(),
            retention: self.retention,
            snapshots: Vec::new(),
            sessions: Vec::new(),
            listed_at_ms: self.listed_at_ms,
        }
    }
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

/// The descriptive fields a Tool's listing says an agent should have.
fn wanted(key: &AgentKey, listing: &ToolListing, seen: &Seen) -> Description {
    let parsed = user_session_id(&key.agent_id).map(UserSessionId::parse);
    let legacy_name = parsed
        .as_ref()
        .and_then(UserSessionId::legacy_name)
        .filter(|n| !n.trim().is_empty())
        .map(str::to_string);
    // (instant, metadata) of everything seen, newest first.
    let mut dated: Vec<(i128, &[crate::agentkit::types::MetadataEntry])> = seen
        .snapshots
        .iter()
        .map(|s| {
            (
                sort_key(s.created_at.as_deref()),
                s.session_metadata.as_slice(),
            )
        })
        .chain(
            seen.sessions
                .iter()
                .map(|s| (sort_key(s.created_at.as_deref()), s.metadata.as_slice())),
        )
        .collect();
    dated.sort_by_key(|(t, _)| std::cmp::Reverse(*t));
    let name = dated.iter().find_map(|(_, m)| {
        metadata_value(m, METADATA_DISPLAY_NAME_KEY)
            .filter(|n| !n.trim().is_empty())
            .map(str::to_string)
    });
    let owner = dated.iter().find_map(|(_, m)| {
        metadata_value(m, METADATA_OWNER_KEY)
            .filter(|o| user_session_id(&key.agent_id).is_some_and(|id| belongs_to(id, o)))
            .map(str::to_string)
    });
    // The oldest thing seen: stable, so the owner index's sort key is too.
    let oldest = seen
        .snapshots
        .iter()
        .map(|s| s.created_at.as_deref())
        .chain(seen.sessions.iter().map(|s| s.created_at.as_deref()))
        .flatten()
        .min_by_key(|t| sort_key(Some(t)))
        .map(str::to_string);
    Description {
        owner,
        owner_key: parsed.as_ref().and_then(UserSessionId::owner_key),
        display_name: name.or(legacy_name),
        created_by: None,
        retention: Some(listing.retention),
        tool_id: Some(listing.tool_id.clone()),
        region: Some(listing.region.clone()),
        created_at: oldest,
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

/// What indexing one agent did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upsert {
    Written,
    Unchanged,
    Failed,
    OutOfTime,
}

/// The changes that bring `current` up to what `listing` says of the agent (`None`: nothing).
fn changes_for(
    current: Option<&AgentRecord>,
    key: &AgentKey,
    listing: &ToolListing,
    seen: &Seen,
    lock: &LockSettings,
) -> Option<Changes> {
    let want = wanted(key, listing, seen);
    if let Some(r) = current {
        // Deleted, or being deleted: not ours to describe. Another holder's work in flight is
        // left alone too (its own writes keep the record current).
        if r.state == WakeState::Gone || lock.is_held(r, now_ms()) {
            return None;
        }
    }
    let mut changes = Changes {
        describe: match current {
            None => Some(want),
            Some(r) => missing(r, &want),
        },
        ..Changes::default()
    };
    // A wake, sleep or delete that wrote the record after the listing began knows the
    // agent's state, session and snapshots better than the listing does (a sleep that ended
    // a session the listing still shows alive, with a snapshot the listing does not have
    // yet): then only what the record lacks is filled in, and the next pass brings the rest.
    // Records keep whole seconds, so the listing's own second counts as after.
    let newer = current
        .and_then(|r| r.updated_at.as_deref())
        .and_then(crate::timestamp::epoch_ms)
        .is_some_and(|at| at + 1000 > listing.listed_at_ms);
    if listing.retention == Retention::Recoverable {
        let summaries = snapshot_views(&seen.snapshots);
        let differ = current.map_or(!summaries.is_empty(), |r| {
            if newer {
                r.snapshots.is_empty() && !summaries.is_empty()
            } else {
                r.snapshots != summaries
            }
        });
        if differ {
            changes.snapshots = Some(summaries);
        }
    }
    if newer {
        return (changes != Changes::default()).then_some(changes);
    }
    // A live session of an agent at rest: the index says it is awake.
    if let Some(live) = crate::agentkit::types::newest_session(seen.sessions.iter().cloned()) {
        let at_rest = current.is_none_or(|r| {
            matches!(
                r.state,
                WakeState::Asleep | WakeState::Failed | WakeState::Awake
            )
        });
        let recorded = current.and_then(|r| r.session_id.as_deref());
        if at_rest && recorded != live.session_id.as_deref() {
            changes.state = Some(WakeState::Awake);
            changes.session_id = Some(live.session_id.clone());
            changes.session_expire_at = Some(live.expire_at.clone());
            changes.verified_at_ms = Some(0);
        }
    }
    (changes != Changes::default()).then_some(changes)
}

/// Bring `key`'s record up to what `listing` says of it.
pub async fn index_agent<S: AgentStore>(
    store: &S,
    key: &AgentKey,
    listing: &ToolListing,
    seen: &Seen,
) -> Upsert {
    let lock = LockSettings::default();
    let mut current = match store.get(key).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(agent = %key, error = %e, "index sync: cannot read record");
            return Upsert::Failed;
        }
    };
    for _ in 0..MAX_ROUNDS {
        let Some(changes) = changes_for(current.as_ref(), key, listing, seen, &lock) else {
            return Upsert::Unchanged;
        };
        let condition = match &current {
            None => Condition::Absent,
            Some(r) => Condition::Version(r.version),
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

    fn listing(snapshots: Vec<Snapshot>, sessions: Vec<Session>) -> ToolListing {
        ToolListing {
            kind: Kind::Codex,
            tool_id: "t-1".into(),
            region: "r".into(),
            retention: Retention::Recoverable,
            snapshots,
            sessions,
            listed_at_ms: now_ms(),
        }
    }

    #[test]
    fn agents_take_the_oldest_time_the_newest_name_and_only_a_matching_owner() {
        let id = "studio-alice-0123";
        let l = listing(
            vec![
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
            ],
            Vec::new(),
        );
        let agents = agents_of(&l);
        let key = AgentKey::new(Kind::Codex, id);
        let d = wanted(&key, &l, &agents[&key]);
        assert_eq!(d.created_at.as_deref(), Some("2026-12-01T00:00:00Z"));
        assert_eq!(d.display_name.as_deref(), Some("New"));
        assert_eq!(
            d.owner.as_deref(),
            Some("alice"),
            "mallory's claim is ignored"
        );
        assert_eq!(d.owner_key.as_deref(), Some("studio-alice"));
        let ownerless = AgentKey::new(Kind::Codex, "snapshot-snap-2026-12-05T00:00:00Z");
        assert!(wanted(&ownerless, &l, &agents[&ownerless])
            .owner_key
            .is_none());
    }

    #[cfg(feature = "memory")]
    #[tokio::test]
    async fn a_live_session_is_indexed_on_a_record_at_rest_only() {
        let id = "studio-alice-0456";
        let session = Session {
            session_id: Some("s-1".into()),
            user_session_id: Some(id.into()),
            status: Some("Ready".into()),
            created_at: Some("2026-12-02T00:00:00Z".into()),
            expire_at: Some("2026-12-02T08:00:00Z".into()),
            ..Session::default()
        };
        let l = listing(
            vec![snap(Some(id), "2026-12-01T00:00:00Z", &[])],
            vec![session],
        );
        let agents = agents_of(&l);
        let key = AgentKey::new(Kind::Codex, id);
        let lock = LockSettings::default();
        let fresh = changes_for(None, &key, &l, &agents[&key], &lock).unwrap();
        assert_eq!(fresh.state, Some(WakeState::Awake));
        assert_eq!(fresh.session_id, Some(Some("s-1".into())));
        assert_eq!(fresh.snapshots.as_ref().map(Vec::len), Some(1));

        // A record that says all of it already: nothing to write.
        let store = crate::store::memory::MemoryStore::new();
        let mut r = store
            .update(&key, &Condition::Absent, &fresh)
            .await
            .unwrap();
        assert!(changes_for(Some(&r), &key, &l, &agents[&key], &lock).is_none());
        // A wake in flight is left alone.
        r.state = WakeState::Waking;
        r.session_id = None;
        r.lease_until_ms = now_ms() + 60_000;
        assert!(changes_for(Some(&r), &key, &l, &agents[&key], &lock).is_none());
    }

    #[test]
    fn a_record_written_since_the_listing_began_keeps_its_state_and_snapshots() {
        // The listing saw the agent awake with one old snapshot; then a sleep ended the
        // session and recorded the snapshot it took.
        let id = "studio-alice-0789";
        let session = Session {
            session_id: Some("s-1".into()),
            user_session_id: Some(id.into()),
            status: Some("Ready".into()),
            ..Session::default()
        };
        let mut l = listing(
            vec![snap(Some(id), "2026-12-01T00:00:00Z", &[])],
            vec![session],
        );
        l.listed_at_ms = now_ms() - 5_000;
        let agents = agents_of(&l);
        let key = AgentKey::new(Kind::Codex, id);
        let lock = LockSettings::default();
        let summary = |id: &str| crate::domain::SnapshotView {
            snapshot_id: id.into(),
            source_session_id: Some("s-1".into()),
            status: Some("Ready".into()),
            reason: None,
            created_at: None,
        };
        let mut r = AgentRecord::absent(key.clone());
        r.version = 4;
        r.state = WakeState::Asleep;
        r.snapshots = vec![summary("snap-new"), summary("snap-2026-12-01T00:00:00Z")];
        r.updated_at = Some(crate::timestamp::now());
        let kept = changes_for(Some(&r), &key, &l, &agents[&key], &lock);
        assert!(
            kept.as_ref().is_none_or(|c| c.state.is_none()
                && c.session_id.is_none()
                && c.snapshots.is_none()),
            "{kept:?}"
        );
        // Written before the listing began: the listing's word stands.
        r.updated_at = Some(crate::timestamp::format_ms(now_ms() - 60_000));
        let c = changes_for(Some(&r), &key, &l, &agents[&key], &lock).unwrap();
        assert_eq!(c.state, Some(WakeState::Awake));
        assert_eq!(c.snapshots.map(|s| s.len()), Some(1));
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
