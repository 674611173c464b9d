//! Listing one Tool to its end, and reading from it which agents exist and what each says.

use std::collections::BTreeMap;

use super::slices::{snapshots_between, SliceSettings};
use crate::agentkit::types::{ListSessions, Session, Snapshot, MAX_PAGE_SIZE};
use crate::agentkit::{AgentKit, AgentKitError, Pager};
use crate::ambient::now_ms;
use crate::domain::{AgentKey, Kind, Retention, ToolRegistry};
use crate::identity::{user_session_id, SNAPSHOT_AGENT_PREFIX};
use crate::invocation::Deadline;
use crate::locate::regions;

/// Most pages read from one Tool: a longer listing is an error, not a Lambda's whole budget.
pub const MAX_SYNC_PAGES: usize = 10_000;

/// Everything one Tool holds: its snapshots (a snapshot Tool) and its sessions, any status.
#[derive(Clone, Debug)]
pub struct ToolListing {
    pub kind: Kind,
    pub tool_id: String,
    pub region: String,
    pub retention: Retention,
    pub snapshots: Vec<Snapshot>,
    pub sessions: Vec<Session>,
    /// When the listing began (epoch ms): a record written since knows better than it.
    pub listed_at_ms: u64,
    /// Only what is new on the Tool (the minute refresh): the snapshots add to what a record
    /// summarises instead of replacing it, and sessions were not read.
    pub partial: bool,
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

/// List one Tool to its end, in the first region that knows it: its snapshots (a snapshot
/// Tool's, in time slices) and sessions. NotFound in every region means "no such Tool".
pub async fn list_tool<K: AgentKit>(
    agentkit: &K,
    registry: &ToolRegistry,
    (kind, tool, retention): (Kind, &str, Retention),
    slices: SliceSettings,
    deadline: Deadline,
) -> Result<ToolListing, AgentKitError> {
    let mut last = None;
    let listed_at_ms = now_ms();
    for region in regions(registry, agentkit) {
        let snapshots = if retention == Retention::Recoverable {
            let read =
                snapshots_between(agentkit, region, tool, (None, None), slices, deadline).await;
            match read {
                Ok(read) => read.snapshots,
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
            partial: false,
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
            partial: self.partial,
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
