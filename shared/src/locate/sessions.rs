//! The AgentKit questions a wake asks of the agent's Tool. Every listing is re-checked against the
//! agent's exact UserSessionId: a wake never acts on another agent's session or snapshot.

use super::{snapshots_on, Home};
use crate::agentkit::port::AGENT_SESSION_PAGES;
use crate::agentkit::types::{
    metadata_value, newest_session, Filter, GetSession, ListSessions, MetadataEntry, Session,
    Snapshot,
};
use crate::agentkit::{list_all, AgentKit, AgentKitError};
use crate::deadline::Deadline;
use crate::domain::{AgentKey, SnapshotPhase};

/// Pages of a Tool's sessions read to find an orphan of a `snapshot-<id>` agent (a rare case).
const ORPHAN_PAGES: usize = 50;

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

/// The agent's active session: `recorded` while active, else the newest by UserSessionId.
pub async fn active_session<K: AgentKit>(
    agentkit: &K,
    home: &Home,
    key: &AgentKey,
    recorded: Option<&str>,
    deadline: Deadline,
) -> Result<Option<Session>, AgentKitError> {
    if let Some(id) = recorded {
        if let Some(s) = session(agentkit, home, id, deadline).await? {
            if s.is_active() {
                return Ok(Some(s));
            }
        }
    }
    match crate::identity::user_session_id(&key.agent_id) {
        Some(usid) => live_session(agentkit, home, usid, deadline).await,
        None => Ok(None),
    }
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

/// The snapshot to resume: the one asked for if Ready, else the newest Ready one (see [`choose`]).
pub fn pick<'s>(
    snapshots: &'s [Snapshot],
    key: &AgentKey,
    wanted: Option<&str>,
    recorded: Option<&str>,
) -> Option<&'s Snapshot> {
    let ready: Vec<&Snapshot> = newest_first(snapshots, key, recorded)
        .into_iter()
        .filter(|s| s.is_wakeable())
        .collect();
    match wanted {
        Some(want) => ready
            .into_iter()
            .find(|s| s.snapshot_id.as_deref() == Some(want)),
        None => ready.into_iter().next(),
    }
}

/// Own snapshots, newest first; among equals (whole seconds): `recorded`, then one in progress
/// (waiting never loses work), then the one AgentKit listed later.
fn newest_first<'s>(
    snapshots: &'s [Snapshot],
    key: &AgentKey,
    recorded: Option<&str>,
) -> Vec<&'s Snapshot> {
    let mut own: Vec<(usize, &Snapshot)> = snapshots
        .iter()
        .filter(|s| is_own(s, key))
        .enumerate()
        .collect();
    own.sort_by_key(|(listed, s)| {
        std::cmp::Reverse((
            crate::timestamp::sort_key(s.created_at.as_deref()),
            recorded.is_some() && s.snapshot_id.as_deref() == recorded,
            s.is_in_progress(),
            *listed,
        ))
    });
    own.into_iter().map(|(_, s)| s).collect()
}

/// A snapshot a wake should expect before a listing shows it: the last session expired just now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The session that expired.
    pub session_id: String,
}

/// What a wake does about its snapshot ([`choose`]).
#[allow(clippy::large_enum_variant)] // made once per wake, consumed at once
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Resume this snapshot; `passed_over`: a newer one that ended `Failed`.
    Wake {
        snapshot: Snapshot,
        passed_over: Option<String>,
    },
    /// The newest snapshot is still being made: wait rather than lose the last session's work.
    Wait { snapshot_id: Option<String> },
    /// The newest snapshot has been `Creating` for longer than the snapshot timeout.
    Stuck { snapshot_id: String },
    /// The newest snapshot's status is undocumented: neither waited for nor passed over.
    Unknown { snapshot_id: String, status: String },
    /// Nothing to wake: the named snapshot is not Ready, or no snapshot is.
    Nothing,
}

/// Decide which snapshot a wake resumes at `now_ms`:
///
/// - a named snapshot (`wanted`) is woken if it is Ready, whatever is newer;
/// - an `expected` snapshot not listed yet is waited for;
/// - else the newest that did not fail decides: Ready → woken; `Creating` → waited for until
///   older than `stuck_after`; unknown → [`Choice::Unknown`].
pub fn choose(
    snapshots: &[Snapshot],
    key: &AgentKey,
    wanted: Option<&str>,
    recorded: Option<&str>,
    expected: Option<&Expected>,
    stuck_after: std::time::Duration,
    now_ms: u64,
) -> Choice {
    if wanted.is_some() {
        return match pick(snapshots, key, wanted, recorded) {
            Some(s) => Choice::Wake {
                snapshot: s.clone(),
                passed_over: None,
            },
            None => Choice::Nothing,
        };
    }
    let own = newest_first(snapshots, key, recorded);
    if let Some(e) = expected {
        if !own
            .iter()
            .any(|s| s.session_id.as_deref() == Some(e.session_id.as_str()))
        {
            return Choice::Wait { snapshot_id: None };
        }
    }
    let mut passed_over = None;
    for s in own {
        let id = s.snapshot_id.clone().unwrap_or_default();
        match s.phase() {
            SnapshotPhase::Ready => {
                return Choice::Wake {
                    snapshot: s.clone(),
                    passed_over,
                }
            }
            SnapshotPhase::Failed => {
                passed_over.get_or_insert(id);
            }
            SnapshotPhase::InProgress => {
                let started = s.created_at.as_deref().and_then(crate::timestamp::epoch_ms);
                let stuck = started
                    .is_some_and(|t| now_ms > t.saturating_add(stuck_after.as_millis() as u64));
                return if stuck {
                    Choice::Stuck { snapshot_id: id }
                } else {
                    Choice::Wait {
                        snapshot_id: Some(id),
                    }
                };
            }
            SnapshotPhase::Unknown => {
                return Choice::Unknown {
                    snapshot_id: id,
                    status: s.status.clone().unwrap_or_default(),
                }
            }
        }
    }
    Choice::Nothing
}

/// Whether `snapshot` is the agent's own (a listing may return more than its filter asked for).
fn is_own(snapshot: &Snapshot, key: &AgentKey) -> bool {
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

/// Sessions an unknown Resume of a `snapshot-<id>` agent may have started: active, without a
/// UserSessionId, created since the Resume (less `margin`), with the snapshot's metadata.
pub async fn orphans_of<K: AgentKit>(
    agentkit: &K,
    home: &Home,
    sent_at_ms: u64,
    margin_ms: u64,
    metadata: &[MetadataEntry],
    deadline: Deadline,
) -> Result<Vec<Session>, AgentKitError> {
    let req = ListSessions {
        tool_id: home.tool_id.clone(),
        max_results: Some(crate::agentkit::types::MAX_PAGE_SIZE),
        ..ListSessions::default()
    };
    let all = list_all(agentkit, &home.region, req, ORPHAN_PAGES, deadline).await?;
    let since = sent_at_ms.saturating_sub(margin_ms);
    Ok(all
        .into_iter()
        .filter(|s| s.is_active())
        .filter(|s| s.user_session_id.as_deref().is_none_or(str::is_empty))
        .filter(|s| {
            s.created_at
                .as_deref()
                .and_then(crate::timestamp::epoch_ms)
                .is_some_and(|t| t >= since)
        })
        .filter(|s| {
            metadata
                .iter()
                .all(|m| metadata_value(&s.metadata, &m.key) == Some(m.value.as_str()))
        })
        .collect())
}

#[cfg(test)]
mod tests;
