//! Collecting what AgentKit and the table know about a set of agents, and turning it into
//! views: the calls every listing makes (per-Tool listings in the region that knows the Tool,
//! exact per-agent listings), what went missing when a call failed, and the rules of which
//! agents a list shows and in which order.

use std::collections::BTreeMap;

use serde::Serialize;
use snapwake::agentkit::types::{Filter, ListSessionSnapshots, ListSessions, Session, Snapshot};
use snapwake::agentkit::{list_all, AgentKit, AgentKitError, Paged};
use snapwake::ambient::now_ms;
use snapwake::domain::OpenUrl;
use snapwake::domain::{
    AgentKey, AgentRecord, AgentState, AgentView, Kind, Retention, ToolRegistry, WakeState,
};
use snapwake::identity::Caller;
use snapwake::invocation::Deadline;
use snapwake::lock::LockSettings;
use snapwake::view::{agent_view, AgentFacts};

/// Pages read for one agent's own snapshots or sessions.
pub const AGENT_PAGES: usize = 20;

/// Something a listing could not read: the kind and region (and agent) and why. The Tool id is
/// shown to admins only: to anyone else it is an internal name that helps nobody act.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Missing {
    pub kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The action and the provider's code (or the class of failure); never a provider message,
    /// an endpoint or a credential.
    pub error: String,
}

impl Missing {
    pub fn new(kind: Kind, tool_id: &str, region: Option<&str>, error: &AgentKitError) -> Self {
        let what = match error {
            AgentKitError::NotFound { .. } => "Tool not found in any region".to_string(),
            AgentKitError::Throttled { .. } => "throttled".into(),
            AgentKitError::Provider { code, status, .. }
            | AgentKitError::Unauthorized { code, status, .. } => format!("{code} (HTTP {status})"),
            AgentKitError::Transport { .. } => "no answer".into(),
            AgentKitError::InvalidResponse { .. } => "invalid response".into(),
            AgentKitError::Credentials(_) => "credentials unavailable".into(),
            AgentKitError::CreateSessionFailed { .. } => "failed".into(),
        };
        Missing {
            kind,
            tool_id: Some(tool_id.to_string()),
            region: region.map(str::to_string),
            agent_id: None,
            error: format!("{}: {what}", error.action()),
        }
    }

    /// As `caller` may see it: the Tool id for admins only.
    pub fn shown_to(mut self, caller: &Caller) -> Self {
        if !caller.is_admin {
            self.tool_id = None;
        }
        self
    }
}

/// Everything known about the agents of one listing.
#[derive(Default)]
pub struct Collected {
    pub sessions: BTreeMap<AgentKey, Vec<Session>>,
    pub snapshots: BTreeMap<AgentKey, Vec<Snapshot>>,
    pub records: BTreeMap<AgentKey, AgentRecord>,
    /// The retention of the Tool each agent was found on.
    pub retention: BTreeMap<AgentKey, Retention>,
    pub missing: Vec<Missing>,
}

impl Collected {
    pub fn add_sessions(&mut self, key: AgentKey, retention: Retention, sessions: Vec<Session>) {
        self.retention.entry(key.clone()).or_insert(retention);
        self.sessions.entry(key).or_default().extend(sessions);
    }

    pub fn add_snapshots(&mut self, key: AgentKey, snapshots: Vec<Snapshot>) {
        self.retention
            .entry(key.clone())
            .or_insert(Retention::Recoverable);
        self.snapshots.entry(key).or_default().extend(snapshots);
    }

    /// The visible agents among `kinds` in `state` (any when `None`), newest activity first.
    pub fn views(
        &self,
        kinds: &[Kind],
        state: Option<AgentState>,
        settings: &LockSettings,
        open_url: Option<&OpenUrl>,
    ) -> Vec<AgentView> {
        let mut keys: Vec<&AgentKey> = self
            .sessions
            .keys()
            .chain(self.snapshots.keys())
            .chain(self.records.keys())
            .filter(|k| kinds.contains(&k.kind))
            .collect();
        keys.sort();
        keys.dedup();
        let now = now_ms();
        let mut views: Vec<AgentView> = keys
            .into_iter()
            .filter_map(|key| {
                let facts = AgentFacts {
                    key,
                    record: self.records.get(key),
                    sessions: self.sessions.get(key).map_or(&[], Vec::as_slice),
                    snapshots: self.snapshots.get(key).map_or(&[], Vec::as_slice),
                    retention: self
                        .retention
                        .get(key)
                        .copied()
                        .unwrap_or(Retention::Recoverable),
                    open_url,
                };
                let view = view_of(&facts, now, settings)?;
                state.is_none_or(|s| s == view.state).then_some(view)
            })
            .collect();
        sort_newest_activity_first(&mut views);
        views
    }
}

/// The view of one agent, or `None` when a list does not show it: a `gone` record, or nothing
/// left to show — no live session, no snapshot and no wake or delete in flight (a temporary
/// agent whose session ended, or a record of an agent AgentKit no longer has).
pub fn view_of(facts: &AgentFacts<'_>, now: u64, settings: &LockSettings) -> Option<AgentView> {
    if facts.record.is_some_and(|r| r.state == WakeState::Gone) {
        return None;
    }
    let view = agent_view(facts, now, settings);
    let something = facts.sessions.iter().any(Session::is_active)
        || !facts.snapshots.is_empty()
        || matches!(
            view.state,
            AgentState::Waking | AgentState::Deleting | AgentState::Sleeping
        );
    something.then_some(view)
}

/// An agent's last activity: its live session's start or its newest snapshot, whichever is
/// later. Ties (and agents with neither) order by kind, then id, so the order is total.
pub fn sort_newest_activity_first(views: &mut [AgentView]) {
    let activity = |v: &AgentView| {
        let session =
            snapwake::ambient::sort_key(v.session.as_ref().and_then(|s| s.created_at.as_deref()));
        let snapshot =
            snapwake::ambient::sort_key(v.snapshots.first().and_then(|s| s.created_at.as_deref()));
        session.max(snapshot)
    };
    views.sort_by(|a, b| {
        activity(b)
            .cmp(&activity(a))
            .then(a.kind.cmp(&b.kind))
            .then(a.agent_id.cmp(&b.agent_id))
    });
}

/// The retention of `tool` in `kind`'s Tools.
pub fn retention_of(registry: &ToolRegistry, kind: Kind, tool: &str) -> Retention {
    match registry.tool(kind, Retention::Temporary) {
        Some(t) if t == tool => Retention::Temporary,
        _ => Retention::Recoverable,
    }
}

/// `(kind, tool)` pairs to read, each once: every Tool of `kinds` when `all`, else only the
/// snapshot Tools.
pub fn tools_of(registry: &ToolRegistry, kinds: &[Kind], all: bool) -> Vec<(Kind, String)> {
    let mut out: Vec<(Kind, String)> = Vec::new();
    for kind in kinds {
        let Some(tools) = registry.kind(*kind) else {
            continue;
        };
        let ids: Vec<&str> = if all {
            tools.all_tools().collect()
        } else {
            tools.snapshot_tools().collect()
        };
        for id in ids {
            if !out.iter().any(|(k, t)| k == kind && t == id) {
                out.push((*kind, id.to_string()));
            }
        }
    }
    out
}

/// Every item of `request` on its Tool, in the first of `regions` that knows the Tool.
/// Answers the region too; the error says in which region it happened.
pub async fn list_on_tool<K: AgentKit, A: Paged>(
    agentkit: &K,
    regions: &[String],
    request: A,
    page_cap: usize,
    deadline: Deadline,
) -> Result<(String, Vec<A::Item>), (Option<String>, AgentKitError)> {
    let mut last = None;
    for region in regions {
        match list_all(agentkit, region, request.clone(), page_cap, deadline).await {
            Ok(items) => return Ok((region.clone(), items)),
            Err(e) if e.is_not_found() => last = Some(e),
            Err(e) => return Err((Some(region.clone()), e)),
        }
    }
    Err((
        None,
        last.unwrap_or(AgentKitError::NotFound {
            action: A::NAME,
            message: "no region configured".into(),
        }),
    ))
}

/// The sessions of one owner on one Tool (the `Username` metadata filter).
pub fn sessions_of_owner(tool: &str, owner: &str) -> ListSessions {
    ListSessions {
        tool_id: tool.to_string(),
        metadata: Some(vec![snapwake::agentkit::types::MetadataFilter {
            key: snapwake::view::METADATA_OWNER_KEY.into(),
            value: owner.to_string(),
        }]),
        ..ListSessions::default()
    }
}

/// The sessions of one agent on one Tool (the `UserSessionId` filter).
pub fn sessions_of_agent(tool: &str, usid: &str) -> ListSessions {
    ListSessions {
        tool_id: tool.to_string(),
        filters: Some(vec![Filter::one("UserSessionId", usid)]),
        ..ListSessions::default()
    }
}

/// The snapshots of one agent on one Tool (exact `UserSessionId`).
pub fn snapshots_of_agent(tool: &str, usid: &str) -> ListSessionSnapshots {
    ListSessionSnapshots {
        tool_id: tool.to_string(),
        user_session_id: Some(usid.to_string()),
        ..ListSessionSnapshots::default()
    }
}

/// Keep what really is `usid`'s (trust but verify the service's filter).
pub fn only_of<T>(items: Vec<T>, usid: &str, id_of: impl Fn(&T) -> Option<&str>) -> Vec<T> {
    items
        .into_iter()
        .filter(|i| id_of(i) == Some(usid))
        .collect()
}
