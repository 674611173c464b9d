//! The agent view derived from AgentKit's truth (sessions, snapshots) plus the agent record
//! (docs/http-api.md, "The agent view"). It carries no session `Endpoint` and no credential.

use crate::agentkit::types::{metadata_value, newest_session, Session, Snapshot};
use crate::domain::failure::{recorded_code, shown_failure, SNAPSHOT_IN_PROGRESS};
use crate::domain::{
    AgentKey, AgentRecord, AgentState, AgentView, OpenUrl, Retention, SessionPhase, SessionView,
    SnapshotView, WakeState, WakeView,
};
use crate::identity::caller::METADATA_DISPLAY_NAME_KEY;
use crate::identity::display_name;
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
    sorted.sort_by_key(|s| std::cmp::Reverse(crate::timestamp::sort_key(s.created_at.as_deref())));
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
        .and_then(crate::timestamp::epoch_ms)
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
    };
    view.open_url = facts.open_url.and_then(|t| t.for_view(&view));
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agentkit::types::MetadataEntry;
    use crate::domain::Kind;

    fn snap(id: &str, status: &str, at: &str) -> Snapshot {
        Snapshot {
            snapshot_id: Some(id.into()),
            status: Some(status.into()),
            created_at: Some(at.into()),
            session_metadata: vec![MetadataEntry::string("veadk_display_name", "Helper")],
            ..Snapshot::default()
        }
    }

    #[test]
    fn asleep_with_newest_snapshot_first_and_metadata_name() {
        let key = AgentKey::new(Kind::Codex, "studio-alice-0123");
        let snaps = [
            snap("old", "Ready", "2026-12-01T01:00:00Z"),
            snap("new", "Ready", "2026-12-01T09:00:00Z"),
        ];
        let v = agent_view(
            &AgentFacts {
                key: &key,
                record: None,
                sessions: &[],
                snapshots: &snaps,
                retention: Retention::Recoverable,
                open_url: None,
            },
            0,
            &LockSettings::default(),
        );
        assert_eq!(v.state, AgentState::Asleep);
        assert_eq!(v.snapshots[0].snapshot_id, "new");
        assert_eq!(v.display_name, "Helper");
        assert!(v.etag.is_none() && v.wake.is_none() && v.session.is_none());
    }

    #[test]
    fn waking_failed_awake_starting_unavailable() {
        let key = AgentKey::new(Kind::Codex, "studio-alice-0123");
        let mut rec = AgentRecord::absent(key.clone());
        rec.state = WakeState::Waking;
        rec.lease_until_ms = 10_000;
        rec.version = 3;
        let settings = LockSettings::default();
        let facts = |r: Option<&AgentRecord>, sessions: &[Session], snaps: &[Snapshot], now| {
            agent_view(
                &AgentFacts {
                    key: &key,
                    record: r,
                    sessions,
                    snapshots: snaps,
                    retention: Retention::Recoverable,
                    open_url: None,
                },
                now,
                &settings,
            )
        };
        let v = facts(Some(&rec), &[], &[], 5_000);
        assert_eq!(v.state, AgentState::Waking);
        assert_eq!(v.etag.as_deref(), Some("\"3\""));
        // The lease ran out (beyond the skew margin): no longer waking.
        assert_eq!(
            facts(Some(&rec), &[], &[], 20_000).state,
            AgentState::Unavailable
        );
        rec.state = WakeState::Failed;
        rec.error = Some("PROVIDER_ERROR: AgentKit said: parse error at line 1 column 7".into());
        let snaps = [snap("s", "Ready", "2026-12-01T01:00:00Z")];
        let v = facts(Some(&rec), &[], &snaps, 5_000);
        assert_eq!(v.state, AgentState::Asleep);
        let wake = v.wake.unwrap();
        assert_eq!(wake.state, "failed");
        assert_eq!(wake.error_code.as_deref(), Some("PROVIDER_ERROR"));
        let words = wake.error.unwrap();
        assert!(
            !words.contains("line 1") && !words.contains("AgentKit said"),
            "{words}"
        );
        let running = Session {
            session_id: Some("s-1".into()),
            status: Some("Creating".into()),
            endpoint: Some("https://secret.example/?auth=x".into()),
            ..Session::default()
        };
        let v = facts(None, std::slice::from_ref(&running), &[], 0);
        assert_eq!(v.state, AgentState::Starting);
        let json = serde_json::to_string(&v).unwrap();
        assert!(!json.contains("secret.example"), "no endpoint in a view");
    }
}
