//! Finding where an agent lives: which of its kind's Tools (and region) holds its snapshots or its
//! live session; then, once it is known ([`Home`]), the questions a wake and a sleep ask of that
//! Tool. [`claims`] says whose a session without a UserSessionId is. Every listing is re-checked against the
//! agent's exact UserSessionId: a wake never acts on another agent's session or snapshot.
//!
//! It also holds the deployment's Tools as the functions read them ([`RegistryCache`]): deploy's
//! item with `SNAPWAKE_TOOL_<KEY>` ids laid over it, cached a minute in a warm container so a
//! burst of requests costs one read.

use crate::agentkit::port::{AGENT_SESSION_PAGES, AGENT_SNAPSHOT_PAGES};
use crate::agentkit::types::{
    metadata_value, newest_session, Filter, GetSession, ListSessionSnapshots, ListSessions,
    MetadataEntry, Session, Snapshot,
};
use crate::agentkit::{list_all, AgentKit, AgentKitError, Pager};
use crate::domain::{AgentKey, AgentRecord, Description, Kind, Retention, ToolRegistry};
use crate::error::Error;
use crate::identity::{user_session_id, SNAPSHOT_AGENT_PREFIX};
use crate::invocation::Deadline;
use crate::store::AgentStore;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

pub mod claims;
pub mod questions;

/// Pages of a snapshot Tool read to find a `snapshot-<id>` agent (a rare, admin-only lookup).
const SNAPSHOT_SCAN_PAGES: usize = 200;

/// Where an agent lives: its Tool, the Tool's region, and the Tool's retention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Home {
    pub tool_id: String,
    pub region: String,
    pub retention: Retention,
}

impl Home {
    /// The record's fields that say where the agent lives.
    pub fn description(&self) -> Description {
        Description {
            tool_id: Some(self.tool_id.clone()),
            region: Some(self.region.clone()),
            ..Description::default()
        }
    }
}

/// Where `record` says the agent lives (`None`: it does not say, or names a Tool gone since).
pub fn home_of(registry: &ToolRegistry, record: &AgentRecord) -> Option<Home> {
    let tool = record.description.tool_id.as_deref()?;
    let kind_tools = registry.kind(record.key.kind)?;
    let retention = if kind_tools.temporary.as_deref() == Some(tool) {
        Retention::Temporary
    } else if kind_tools.snapshot_tools().any(|t| t == tool) {
        Retention::Recoverable
    } else {
        return None;
    };
    Some(Home {
        tool_id: tool.to_string(),
        region: record.description.region.clone()?,
        retention,
    })
}

/// Where an agent was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub tool_id: String,
    pub region: String,
    pub retention: Retention,
    /// The agent's snapshots on that Tool (any status).
    pub snapshots: Vec<Snapshot>,
    /// The agent's active sessions on that Tool, when it was found by them.
    pub sessions: Vec<Session>,
}

impl Located {
    pub fn home(&self) -> Home {
        Home {
            tool_id: self.tool_id.clone(),
            region: self.region.clone(),
            retention: self.retention,
        }
    }
}

/// Where an agent lives, and what finding it listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Whereabouts {
    pub home: Home,
    /// The agent's snapshots, when finding it listed them.
    pub snapshots: Option<Vec<Snapshot>>,
}

/// Where `key` lives, for wake, sleep, keepalive and delete: `known`, else the Tool the record
/// names ([`home_of`]), else where [`locate`] finds it (`None`: nowhere).
pub async fn home_or_locate<K: AgentKit>(
    agentkit: &K,
    registry: &ToolRegistry,
    key: &AgentKey,
    record: Option<&AgentRecord>,
    known: Option<&Home>,
    deadline: Deadline,
) -> Result<Option<Whereabouts>, Error> {
    let recorded = known
        .cloned()
        .or_else(|| record.and_then(|r| home_of(registry, r)));
    if let Some(home) = recorded {
        return Ok(Some(Whereabouts {
            home,
            snapshots: None,
        }));
    }
    Ok(Box::pin(locate(agentkit, registry, key, deadline))
        .await?
        .map(|found| Whereabouts {
            home: found.home(),
            snapshots: Some(found.snapshots),
        }))
}

/// Regions to try: the registry's first, then the configured ones.
pub fn regions<'a>(registry: &'a ToolRegistry, agentkit: &'a impl AgentKit) -> Vec<&'a str> {
    let mut out: Vec<&str> = registry.region.as_deref().into_iter().collect();
    for r in agentkit.regions() {
        if !out.contains(&r.as_str()) {
            out.push(r);
        }
    }
    out
}

/// Find `key`: by its snapshots on its kind's snapshot Tools, else by its live session.
pub async fn locate<K: AgentKit>(
    agentkit: &K,
    registry: &ToolRegistry,
    key: &AgentKey,
    deadline: Deadline,
) -> Result<Option<Located>, Error> {
    let Some(kind_tools) = registry.kind(key.kind) else {
        return Ok(None);
    };
    let tools: Vec<&str> = kind_tools.snapshot_tools().collect();
    let regions = regions(registry, agentkit);
    for tool in &tools {
        for region in &regions {
            match snapshots_on(agentkit, tool, region, key, deadline).await {
                Ok(snaps) if !snaps.is_empty() => {
                    return Ok(Some(Located {
                        tool_id: tool.to_string(),
                        region: region.to_string(),
                        retention: Retention::Recoverable,
                        snapshots: snaps,
                        sessions: Vec::new(),
                    }))
                }
                // The Tool exists here and the agent has no snapshot on it.
                Ok(_) => break,
                // The Tool lives in another region.
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
    // No snapshot: an agent that is awake and never slept is found by its session.
    let Some(usid) = user_session_id(&key.agent_id) else {
        return Ok(None);
    };
    for tool in kind_tools.all_tools() {
        for region in &regions {
            let req = ListSessions {
                tool_id: tool.to_string(),
                filters: Some(vec![Filter::one("UserSessionId", usid)]),
                ..ListSessions::default()
            };
            match list_all(agentkit, region, req, 10, deadline).await {
                Ok(sessions) => {
                    let active: Vec<Session> = sessions
                        .into_iter()
                        .filter(|s| s.is_active() && s.user_session_id.as_deref() == Some(usid))
                        .collect();
                    if !active.is_empty() {
                        let retention = if kind_tools.temporary.as_deref() == Some(tool) {
                            Retention::Temporary
                        } else {
                            Retention::Recoverable
                        };
                        return Ok(Some(Located {
                            tool_id: tool.to_string(),
                            region: region.to_string(),
                            retention,
                            snapshots: Vec::new(),
                            sessions: active,
                        }));
                    }
                    break;
                }
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(None)
}

/// The snapshots of one agent on one Tool (any status): by its exact UserSessionId, or for a
/// `snapshot-<id>` agent, its one snapshot found by listing the Tool.
pub async fn snapshots_on<K: AgentKit>(
    agentkit: &K,
    tool: &str,
    region: &str,
    key: &AgentKey,
    deadline: Deadline,
) -> Result<Vec<Snapshot>, AgentKitError> {
    match user_session_id(&key.agent_id) {
        Some(usid) => {
            let req = ListSessionSnapshots {
                tool_id: tool.to_string(),
                user_session_id: Some(usid.to_string()),
                ..ListSessionSnapshots::default()
            };
            let all = list_all(agentkit, region, req, AGENT_SNAPSHOT_PAGES, deadline).await?;
            // Trust but verify the service's filter: never act on another agent's snapshot.
            Ok(all
                .into_iter()
                .filter(|s| s.user_session_id.as_deref() == Some(usid))
                .collect())
        }
        None => {
            let wanted = &key.agent_id[SNAPSHOT_AGENT_PREFIX.len()..];
            let req = ListSessionSnapshots {
                tool_id: tool.to_string(),
                max_results: Some(crate::agentkit::types::MAX_PAGE_SIZE),
                ..ListSessionSnapshots::default()
            };
            let mut pager = Pager::new(agentkit, region, req, SNAPSHOT_SCAN_PAGES);
            while let Some(page) = pager.next_page(deadline).await? {
                if let Some(s) = page.into_iter().find(|s| {
                    s.snapshot_id.as_deref() == Some(wanted)
                        && s.user_session_id.as_deref().is_none_or(str::is_empty)
                }) {
                    return Ok(vec![s]);
                }
            }
            Ok(Vec::new())
        }
    }
}

/// The session `session_id` on the agent's Tool, if AgentKit still has it.
pub async fn session<K: AgentKit>(
    agentkit: &K,
    home: &Home,
    session_id: &str,
    deadline: Deadline,
) -> Result<Option<Session>, AgentKitError> {
    let req = GetSession {
        tool_id: home.tool_id.clone(),
        session_id: session_id.to_string(),
    };
    match agentkit.call(&home.region, &req, deadline).await {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether `snapshot` is the agent's own (a listing may return more than its filter asked for).
pub(crate) fn is_own(snapshot: &Snapshot, key: &AgentKey) -> bool {
    match crate::identity::user_session_id(&key.agent_id) {
        Some(usid) => snapshot.user_session_id.as_deref() == Some(usid),
        None => {
            let own = key
                .agent_id
                .strip_prefix(crate::identity::SNAPSHOT_AGENT_PREFIX);
            own.is_some() && snapshot.snapshot_id.as_deref() == own
        }
    }
}

/// The agent's own snapshots among `listing`.
pub fn own_snapshots(listing: &[Snapshot], key: &AgentKey) -> Vec<Snapshot> {
    listing.iter().filter(|s| is_own(s, key)).cloned().collect()
}

/// How long a read registry is trusted.
pub const REGISTRY_TTL: Duration = Duration::from_secs(60);

/// Catalogue keys whose Tool id may be pinned by `SNAPWAKE_TOOL_<KEY>`, and what they name.
pub const TOOL_KEYS: [(&str, Kind, Retention); 6] = [
    ("CODEX", Kind::Codex, Retention::Temporary),
    ("CODEX_SNAPSHOT", Kind::Codex, Retention::Recoverable),
    ("OPENCLAW", Kind::Openclaw, Retention::Temporary),
    ("OPENCLAW_SNAPSHOT", Kind::Openclaw, Retention::Recoverable),
    ("HERMES", Kind::Hermes, Retention::Temporary),
    ("HERMES_SNAPSHOT", Kind::Hermes, Retention::Recoverable),
];

/// Explicit Tool ids from the environment, by catalogue key (`CODEX_SNAPSHOT`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolOverrides(pub BTreeMap<String, String>);

impl ToolOverrides {
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let mut map = BTreeMap::new();
        for (key, _, _) in TOOL_KEYS {
            if let Some(id) =
                lookup(&format!("SNAPWAKE_TOOL_{key}")).filter(|v| !v.trim().is_empty())
            {
                map.insert(key.to_string(), id.trim().to_string());
            }
        }
        ToolOverrides(map)
    }

    pub fn apply(&self, mut registry: ToolRegistry) -> ToolRegistry {
        for (key, kind, retention) in TOOL_KEYS {
            if let Some(id) = self.0.get(key) {
                let tools = registry.kinds.entry(kind).or_default();
                match retention {
                    Retention::Temporary => tools.temporary = Some(id.clone()),
                    Retention::Recoverable => tools.recoverable = Some(id.clone()),
                }
            }
        }
        registry
    }
}

#[derive(Debug)]
pub struct RegistryCache {
    overrides: ToolOverrides,
    ttl: Duration,
    cached: Mutex<Option<(Instant, Arc<ToolRegistry>)>>,
}

impl RegistryCache {
    pub fn new(overrides: ToolOverrides) -> Self {
        Self::with_ttl(overrides, REGISTRY_TTL)
    }

    pub fn with_ttl(overrides: ToolOverrides, ttl: Duration) -> Self {
        RegistryCache {
            overrides,
            ttl,
            cached: Mutex::new(None),
        }
    }

    /// The current registry, cached for a TTL; none written yet reads as empty (plus overrides).
    pub async fn get<S: AgentStore>(&self, store: &S) -> Result<Arc<ToolRegistry>, Error> {
        if let Some(hit) = self.fresh() {
            return Ok(hit);
        }
        let stored = store.get_registry().await?.unwrap_or_default();
        let registry = Arc::new(self.overrides.apply(stored));
        if let Ok(mut slot) = self.cached.lock() {
            *slot = Some((Instant::now(), registry.clone()));
        }
        Ok(registry)
    }

    /// Forget the cached registry (deploy calls this after writing a new one).
    pub fn invalidate(&self) {
        if let Ok(mut slot) = self.cached.lock() {
            *slot = None;
        }
    }

    fn fresh(&self) -> Option<Arc<ToolRegistry>> {
        let slot = self.cached.lock().ok()?;
        let (at, registry) = slot.as_ref()?;
        (at.elapsed() < self.ttl).then(|| registry.clone())
    }
}

/// The newest active session with the agent's UserSessionId on its Tool.
pub async fn live_session<K: AgentKit>(
    agentkit: &K,
    home: &Home,
    user_session_id: &str,
    deadline: Deadline,
) -> Result<Option<Session>, AgentKitError> {
    let req = ListSessions {
        tool_id: home.tool_id.clone(),
        filters: Some(vec![Filter::one("UserSessionId", user_session_id)]),
        ..ListSessions::default()
    };
    let sessions = list_all(agentkit, &home.region, req, AGENT_SESSION_PAGES, deadline).await?;
    Ok(newest_session(sessions.into_iter().filter(|s| {
        s.is_active() && s.user_session_id.as_deref() == Some(user_session_id)
    })))
}

/// The agent's snapshots on its Tool (any status).
pub async fn snapshots<K: AgentKit>(
    agentkit: &K,
    home: &Home,
    key: &AgentKey,
    deadline: Deadline,
) -> Result<Vec<Snapshot>, AgentKitError> {
    snapshots_on(agentkit, &home.tool_id, &home.region, key, deadline).await
}

#[cfg(test)]
mod registry_tests;

#[cfg(all(test, feature = "memory"))]
mod registry_cache_tests;
