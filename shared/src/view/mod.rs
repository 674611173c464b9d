//! How an agent reads from AgentKit's truth (sessions, snapshots) plus the agent record: the
//! view a person sees (docs/http-api.md, "The agent view"), which carries no session
//! `Endpoint` and no credential, and the snapshot a wake resumes ([`choose`]).

use crate::agentkit::types::{metadata_value, newest_session, Session, Snapshot};
use crate::domain::failure::{recorded_code, shown_failure, SNAPSHOT_IN_PROGRESS};
use crate::domain::{
    AgentKey, AgentRecord, AgentState, AgentView, OpenUrl, Retention, SessionPhase, SessionView,
    SnapshotPhase, SnapshotView, WakeState, WakeView,
};
use crate::identity::caller::METADATA_DISPLAY_NAME_KEY;
use crate::identity::display_name;
use crate::locate::is_own;
use crate::lock::LockSettings;

mod schedule;
pub use schedule::schedule_view;

/// Metadata key holding the raw owner id.
pub const METADATA_OWNER_KEY: &str = "Username";
/// Metadata key holding the creator's display name.
pub const METADATA_CREATOR_KEY: &str = "veadk_creator_name";

/// What is known about one agent.
pub struct AgentFacts<'a> {
    pub key: &'a AgentKey,
    pub record: Option<&'a AgentRecord>,
    pub sessions: &'a [Session],
    pub snapshots: &'a [Snapshot],
    pub retention: Retention,
    /// The deployment's open link (`SNAPWAKE_OPEN_URL`), which an awake agent's view carries.
    pub open_url: Option<&'a OpenUrl>,
}

/// `snapshots`, newest first (by instant, never by text).
fn newest_first(snapshots: &[Snapshot]) -> Vec<&Snapshot> {
    let mut sorted: Vec<&Snapshot> = snapshots.iter().collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(crate::ambient::sort_key(s.created_at.as_deref())));
    sorted
}

/// The summary an agent record keeps of one snapshot.
pub fn snapshot_view(s: &Snapshot) -> SnapshotView {
    SnapshotView {
        snapshot_id: s.snapshot_id.clone().unwrap_or_default(),
        source_session_id: s.session_id.clone(),
        status: s.status.clone(),
        reason: s.reason.clone(),
        created_at: s.created_at.clone(),
    }
}

pub fn snapshot_views(snapshots: &[Snapshot]) -> Vec<SnapshotView> {
    newest_first(snapshots)
        .into_iter()
        .map(snapshot_view)
        .collect()
}

/// The snapshots an agent record summarises, as AgentKit would list them.
pub fn record_snapshots(record: &AgentRecord) -> Vec<Snapshot> {
    record
        .snapshots
        .iter()
        .map(|s| Snapshot {
            snapshot_id: Some(s.snapshot_id.clone()),
            session_id: s.source_session_id.clone(),
            status: s.status.clone(),
            reason: s.reason.clone(),
            created_at: s.created_at.clone(),
            ..Snapshot::default()
        })
        .collect()
}

/// A wake in flight as the API shows it; `reason` is set while it waits for the last snapshot.
pub fn waking_view(record: &AgentRecord) -> WakeView {
    WakeView {
        reason: record
            .error
            .as_deref()
            .and_then(recorded_code)
            .filter(|c| *c == SNAPSHOT_IN_PROGRESS)
            .map(str::to_string),
        ..WakeView::in_flight(
            "waking",
            record.updated_at.clone(),
            record.session_id.clone(),
        )
    }
}

/// The session `record` says is live: awake, or sleeping until its snapshot is Ready, and not
/// expired at `now_ms`. For views from the table alone, or when no owner listing finds it.
pub fn recorded_session(record: &AgentRecord, now_ms: u64) -> Option<Session> {
    let expired = record
        .session_expire_at
        .as_deref()
        .and_then(crate::ambient::epoch_ms)
        .is_some_and(|t| t <= now_ms);
    let live = matches!(record.state, WakeState::Awake | WakeState::Sleeping) && !expired;
    let id = record.session_id.clone().filter(|_| live)?;
    Some(Session {
        session_id: Some(id),
        user_session_id: crate::identity::user_session_id(&record.key.agent_id).map(str::to_string),
        status: Some("Ready".into()),
        expire_at: record.session_expire_at.clone(),
        created_at: record.session_created_at.clone(),
        ..Session::default()
    })
}

/// `view` as `owner` sees it: an agent with no owner named is `owner`'s, and made by them, when
/// its UserSessionId says so (`crate::identity::belongs_to`).
pub fn seen_by_owner(view: &mut AgentView, owner: &str) {
    if view.owner.is_some() {
        return;
    }
    let usid = crate::identity::user_session_id(&view.agent_id);
    if usid.is_some_and(|id| crate::identity::belongs_to(id, owner)) {
        view.owner = Some(owner.to_string());
        view.created_by.get_or_insert_with(|| owner.to_string());
    }
}

/// The view of one agent at `now_ms`.
pub fn agent_view(facts: &AgentFacts<'_>, now_ms: u64, settings: &LockSettings) -> AgentView {
    let record = facts.record;
    let live = newest_session(facts.sessions.iter().filter(|s| s.is_active()).cloned());
    let snapshots = newest_first(facts.snapshots);

    let held = |state: WakeState| {
        record.is_some_and(|r| r.state == state && settings.lease_is_live(r, now_ms))
    };
    let state = if held(WakeState::Deleting) {
        AgentState::Deleting
    } else if held(WakeState::Waking) {
        AgentState::Waking
    } else if held(WakeState::Sleeping) {
        AgentState::Sleeping
    } else if let Some(s) = &live {
        // By status alone: a session read back from the record carries no endpoint.
        match SessionPhase::of(s.status.as_deref(), true) {
            SessionPhase::Usable => AgentState::Awake,
            SessionPhase::Unknown => AgentState::Unknown,
            SessionPhase::Starting | SessionPhase::Ended => AgentState::Starting,
        }
    } else if snapshots.iter().any(|s| s.is_wakeable()) {
        AgentState::Asleep
    } else {
        AgentState::Unavailable
    };

    let metadata = live
        .as_ref()
        .map(|s| s.metadata.as_slice())
        .or_else(|| facts.sessions.first().map(|s| s.metadata.as_slice()))
        .filter(|m| !m.is_empty())
        .or_else(|| snapshots.first().map(|s| s.session_metadata.as_slice()))
        .unwrap_or_default();
    let usid = Some(facts.key.agent_id.as_str()).filter(|id| !id.starts_with("snapshot-"));
    let name = display_name(
        record.and_then(|r| r.description.display_name.as_deref()),
        metadata_value(metadata, METADATA_DISPLAY_NAME_KEY),
        usid,
        snapshots.first().and_then(|s| s.snapshot_id.as_deref()),
    );
    let owner = record
        .and_then(|r| r.description.owner.clone())
        .or_else(|| metadata_value(metadata, METADATA_OWNER_KEY).map(str::to_string))
        .filter(|o| !o.trim().is_empty());
    // Nobody else made an owner's agent: an earlier Studio's (`studio2-`) and one made outside
    // snapwake without a creator shows its owner as its creator, as the reference Studio does.
    let created_by = record
        .and_then(|r| r.description.created_by.clone())
        .or_else(|| metadata_value(metadata, METADATA_CREATOR_KEY).map(str::to_string))
        .or_else(|| owner.clone());

    let wake = record.and_then(|r| match r.state {
        WakeState::Waking if settings.lease_is_live(r, now_ms) => Some(waking_view(r)),
        WakeState::Sleeping if settings.lease_is_live(r, now_ms) => Some(WakeView::in_flight(
            "sleeping",
            r.updated_at.clone(),
            r.session_id.clone(),
        )),
        WakeState::Failed => {
            let (code, words) = shown_failure(r.error.as_deref().unwrap_or_default());
            Some(WakeView {
                state: "failed".into(),
                since: r.updated_at.clone(),
                session_id: None,
                error: Some(words.to_string()),
                error_code: Some(code.to_string()),
                reason: None,
            })
        }
        _ => None,
    });

    let mut view = AgentView {
        kind: facts.key.kind,
        agent_id: facts.key.agent_id.clone(),
        display_name: name,
        owner,
        created_by,
        retention: record
            .and_then(|r| r.description.retention)
            .unwrap_or(facts.retention),
        state,
        session: live.map(|s| SessionView {
            session_id: s.session_id.unwrap_or_default(),
            status: s.status,
            created_at: s.created_at,
            expire_at: s.expire_at,
        }),
        snapshots: snapshots.into_iter().map(snapshot_view).collect(),
        wake,
        etag: record.filter(|r| r.version > 0).map(AgentRecord::etag),
        as_of: None,
        open_url: None,
        schedule: record.and_then(|r| r.schedule.as_ref()).map(schedule_view),
        idle_minutes: record.and_then(|r| r.idle_minutes),
        idle_sleep_at: record
            .filter(|_| matches!(state, AgentState::Awake | AgentState::Starting))
            .and_then(|r| r.idle_at_ms)
            .map(crate::ambient::format_ms),
    };
    view.open_url = facts.open_url.and_then(|t| open_link(t, &view));
    view
}

/// The open link of `view`: only while it is awake with a session.
pub fn open_link(url: &OpenUrl, view: &AgentView) -> Option<String> {
    let session = view
        .session
        .as_ref()
        .filter(|_| view.state == AgentState::Awake)?;
    Some(url.fill(view.kind, &view.agent_id, &session.session_id))
}

/// Step 4 of a wake's holder (docs/wake-protocol.md): the snapshot to resume, decided from a
/// listing of the agent's own snapshots and what the record expects: the one asked for if
/// Ready, else the newest Ready one (see [`choose`]).
pub fn pick<'s>(
    snapshots: &'s [Snapshot],
    key: &AgentKey,
    wanted: Option<&str>,
    recorded: Option<&str>,
) -> Option<&'s Snapshot> {
    let ready: Vec<&Snapshot> = newest_own_first(snapshots, key, recorded)
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
fn newest_own_first<'s>(
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
            crate::ambient::sort_key(s.created_at.as_deref()),
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
    let own = newest_own_first(snapshots, key, recorded);
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
                let started = s.created_at.as_deref().and_then(crate::ambient::epoch_ms);
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod open_url_tests;

#[cfg(test)]
mod choice_tests;
