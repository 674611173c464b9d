//! The AgentKit questions a wake asks: is this session alive, which session of this agent is
//! alive, which snapshot to resume, and, for an agent no listing can find by id, which
//! unclaimed session an unknown Resume left behind.
//!
//! Every listing is re-checked against the agent's exact UserSessionId, whatever the service's
//! filter returned: a wake never adopts or resumes another agent's session or snapshot.

use super::{snapshots_on, Home};
use crate::agentkit::pagination::AGENT_SESSION_PAGES;
use crate::agentkit::types::{
    metadata_value, newest_session, Filter, GetSession, ListSessions, MetadataEntry, Session,
    Snapshot,
};
use crate::agentkit::{list_all, AgentKit, AgentKitError};
use crate::deadline::Deadline;
use crate::domain::{AgentKey, SnapshotPhase};

/// Pages of a Tool's sessions read to find the orphan of an unknown Resume of a
/// `snapshot-<id>` agent (an admin-only, rare case).
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

/// The agent's snapshots on its Tool (any status).
pub async fn snapshots<K: AgentKit>(
    agentkit: &K,
    home: &Home,
    key: &AgentKey,
    deadline: Deadline,
) -> Result<Vec<Snapshot>, AgentKitError> {
    snapshots_on(agentkit, &home.tool_id, &home.region, key, deadline).await
}

/// The snapshot to resume among `snapshots`: the one asked for if it is Ready, else the
/// newest Ready one. Only the agent's own snapshots count (its exact UserSessionId, or for a
/// `snapshot-<id>` agent its own SnapshotId). AgentKit's times are whole seconds: among
/// snapshots equally new, `recorded` (the one the record names, the last a sleep took) wins.
///
/// This is the bare rule; a wake asks [`choose`], which also waits for a newer snapshot still
/// being made.
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

/// The agent's own snapshots, newest first. AgentKit's times are whole seconds; among equals,
/// `recorded` comes first, then one still in progress (taken for the newer: waiting for it
/// never loses work, passing it over might), then the one listed later (AgentKit lists oldest
/// first, by its own finer clock: a sleep's snapshot taken in the same second as the one it
/// woke from is listed after it).
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

/// What a wake may know about the snapshot it should expect: the agent's last session expired
/// moments ago, so AgentKit is (or soon will be) making a snapshot of it, which a listing may
/// not show yet (docs/wake-protocol.md, "AgentKit keeps its own time").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The session that expired.
    pub session_id: String,
}

/// What a wake does about its snapshot ([`choose`]).
#[allow(clippy::large_enum_variant)] // made once per wake, consumed at once
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Resume this snapshot. `passed_over`: a newer snapshot that ended `Failed` (the wake
    /// falls back to the newest Ready one, and says so).
    Wake {
        snapshot: Snapshot,
        passed_over: Option<String>,
    },
    /// The newest snapshot is still being made (named when it is listed): wait for it rather
    /// than wake an older one and lose the last session's work.
    Wait { snapshot_id: Option<String> },
    /// The newest snapshot has been `Creating` for longer than the snapshot timeout.
    Stuck { snapshot_id: String },
    /// The newest snapshot is in a status nobody documented: neither waited for nor passed
    /// over.
    Unknown { snapshot_id: String, status: String },
    /// Nothing to wake: the named snapshot is not Ready (or not the agent's), or the agent has
    /// no Ready snapshot at all.
    Nothing,
}

/// Decide which snapshot a wake resumes, at `now_ms` (docs/wake-protocol.md, "AgentKit keeps
/// its own time"):
///
/// - a named snapshot (`wanted`) is woken if it is Ready, whatever is newer;
/// - an `expected` snapshot not listed yet is waited for;
/// - otherwise the newest snapshot that did not fail decides: Ready → woken; `Creating` →
///   waited for, until it is older than `stuck_after` (then [`Choice::Stuck`]); an unknown
///   status → [`Choice::Unknown`]. Newer `Failed` ones are passed over.
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

/// Whether `snapshot` is the agent's own: its exact UserSessionId, or for a `snapshot-<id>`
/// agent its own SnapshotId (a listing may return more than its filter asked for).
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

/// The session an unknown Resume of a `snapshot-<id>` agent may have started: sessions of a
/// snapshot without a UserSessionId have none either, so no filter finds them. The candidates
/// are the Tool's active sessions without a UserSessionId, created no earlier than the Resume
/// was sent (less `margin`: AgentKit writes whole seconds, and clocks drift a little) and,
/// when the snapshot carried metadata, carrying the same. Exactly one candidate is adopted;
/// none or several adopt nothing (the caller then waits out the readiness timeout before it
/// may send another Resume, as docs/wake-protocol.md, "Agents no listing can find", allows).
pub async fn orphan_of<K: AgentKit>(
    agentkit: &K,
    home: &Home,
    sent_at_ms: u64,
    margin_ms: u64,
    metadata: &[MetadataEntry],
    deadline: Deadline,
) -> Result<Option<Session>, AgentKitError> {
    let req = ListSessions {
        tool_id: home.tool_id.clone(),
        max_results: Some(crate::agentkit::types::MAX_PAGE_SIZE),
        ..ListSessions::default()
    };
    let all = list_all(agentkit, &home.region, req, ORPHAN_PAGES, deadline).await?;
    let since = sent_at_ms.saturating_sub(margin_ms);
    let mut candidates: Vec<Session> = all
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
        .collect();
    if candidates.len() > 1 {
        tracing::warn!(
            tool_id = %home.tool_id,
            candidates = candidates.len(),
            "several unclaimed sessions could be the orphan of an unknown Resume; adopting none"
        );
        return Ok(None);
    }
    Ok(candidates.pop())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Kind;

    fn snap(id: &str, usid: Option<&str>, status: &str, at: &str) -> Snapshot {
        Snapshot {
            snapshot_id: Some(id.into()),
            user_session_id: usid.map(str::to_string),
            status: Some(status.into()),
            created_at: Some(at.into()),
            ..Snapshot::default()
        }
    }

    #[test]
    fn only_the_agents_own_ready_snapshots_are_picked() {
        let key = AgentKey::new(Kind::Codex, "studio-alice-01");
        let snaps = [
            snap(
                "old",
                Some("studio-alice-01"),
                "Ready",
                "2026-12-01T00:00:00Z",
            ),
            snap(
                "new",
                Some("studio-alice-01"),
                "Ready",
                "2026-12-02T00:00:00Z",
            ),
            snap(
                "newest",
                Some("studio-alice-01"),
                "Creating",
                "2026-12-03T00:00:00Z",
            ),
            // A listing that ignored its filter: never another agent's snapshot.
            snap(
                "theirs",
                Some("studio-alice-0"),
                "Ready",
                "2026-12-04T00:00:00Z",
            ),
        ];
        assert_eq!(
            pick(&snaps, &key, None, None).and_then(|s| s.snapshot_id.as_deref()),
            Some("new")
        );
        assert_eq!(
            pick(&snaps, &key, Some("old"), None).and_then(|s| s.snapshot_id.as_deref()),
            Some("old")
        );
        assert!(pick(&snaps, &key, Some("newest"), None).is_none());
        assert!(pick(&snaps, &key, Some("theirs"), None).is_none());
    }

    #[test]
    fn among_snapshots_of_the_same_second_the_recorded_one_wins() {
        let key = AgentKey::new(Kind::Codex, "studio-alice-01");
        let at = "2026-12-02T00:00:00Z";
        let snaps = [
            snap("a", Some("studio-alice-01"), "Ready", at),
            snap("b", Some("studio-alice-01"), "Ready", at),
            snap("c", Some("studio-alice-01"), "Ready", at),
        ];
        for recorded in ["a", "b", "c"] {
            assert_eq!(
                pick(&snaps, &key, None, Some(recorded)).and_then(|s| s.snapshot_id.as_deref()),
                Some(recorded)
            );
        }
        // A newer one still wins over the recorded one.
        let mut newer = snaps.to_vec();
        newer.push(snap(
            "d",
            Some("studio-alice-01"),
            "Ready",
            "2026-12-02T00:00:01Z",
        ));
        assert_eq!(
            pick(&newer, &key, None, Some("a")).and_then(|s| s.snapshot_id.as_deref()),
            Some("d")
        );
    }

    const DAY: u64 = 86_400_000;
    fn at_ms(ts: &str) -> u64 {
        crate::timestamp::epoch_ms(ts).unwrap()
    }

    fn chosen(c: &Choice) -> Option<&str> {
        match c {
            Choice::Wake { snapshot, .. } => snapshot.snapshot_id.as_deref(),
            _ => None,
        }
    }

    #[test]
    fn among_snapshots_of_one_second_the_one_listed_later_is_newer() {
        // A wake, then a sleep within the same second: AgentKit lists the sleep's last.
        let key = AgentKey::new(Kind::Codex, "studio-alice-01");
        let u = Some("studio-alice-01");
        let at = "2026-12-02T00:00:00Z";
        let snaps = [snap("woken", u, "Ready", at), snap("slept", u, "Ready", at)];
        assert_eq!(
            pick(&snaps, &key, None, None).and_then(|s| s.snapshot_id.as_deref()),
            Some("slept")
        );
        // What the record names still wins.
        assert_eq!(
            pick(&snaps, &key, None, Some("woken")).and_then(|s| s.snapshot_id.as_deref()),
            Some("woken")
        );
    }

    #[test]
    fn a_newer_snapshot_in_progress_is_waited_for_not_passed_over() {
        let key = AgentKey::new(Kind::Codex, "studio-alice-01");
        let u = Some("studio-alice-01");
        let snaps = [
            snap("old", u, "Ready", "2026-12-01T00:00:00Z"),
            snap("new", u, "Creating", "2026-12-02T00:00:00Z"),
        ];
        let now = at_ms("2026-12-02T00:01:00Z");
        let timeout = std::time::Duration::from_secs(1800);
        assert_eq!(
            choose(&snaps, &key, None, None, None, timeout, now),
            Choice::Wait {
                snapshot_id: Some("new".into())
            }
        );
        // Still Creating after the snapshot timeout: stuck, named.
        assert_eq!(
            choose(&snaps, &key, None, None, None, timeout, now + DAY),
            Choice::Stuck {
                snapshot_id: "new".into()
            }
        );
        // The owner may still wake the older one by name.
        let named = choose(&snaps, &key, Some("old"), None, None, timeout, now);
        assert_eq!(chosen(&named), Some("old"));
        // A named snapshot still Creating is not wakeable.
        assert_eq!(
            choose(&snaps, &key, Some("new"), None, None, timeout, now),
            Choice::Nothing
        );
    }

    #[test]
    fn a_failed_newest_snapshot_falls_back_and_says_so() {
        let key = AgentKey::new(Kind::Codex, "studio-alice-01");
        let u = Some("studio-alice-01");
        let snaps = [
            snap("old", u, "Ready", "2026-12-01T00:00:00Z"),
            snap("bad", u, "Failed", "2026-12-02T00:00:00Z"),
        ];
        let c = choose(
            &snaps,
            &key,
            None,
            None,
            None,
            std::time::Duration::from_secs(1800),
            at_ms("2026-12-02T00:01:00Z"),
        );
        assert_eq!(chosen(&c), Some("old"));
        assert!(matches!(c, Choice::Wake { passed_over: Some(ref id), .. } if id == "bad"));
    }

    #[test]
    fn an_expected_snapshot_not_listed_yet_is_waited_for() {
        let key = AgentKey::new(Kind::Codex, "studio-alice-01");
        let u = Some("studio-alice-01");
        let mut snaps = vec![snap("old", u, "Ready", "2026-12-01T00:00:00Z")];
        let expected = Expected {
            session_id: "s-last".into(),
        };
        let timeout = std::time::Duration::from_secs(1800);
        let now = at_ms("2026-12-02T00:01:00Z");
        assert_eq!(
            choose(&snaps, &key, None, None, Some(&expected), timeout, now),
            Choice::Wait { snapshot_id: None }
        );
        let mut last = snap("last", u, "Ready", "2026-12-02T00:00:00Z");
        last.session_id = Some("s-last".into());
        snaps.push(last);
        let c = choose(&snaps, &key, None, None, Some(&expected), timeout, now);
        assert_eq!(chosen(&c), Some("last"));
    }

    #[test]
    fn an_unknown_newest_snapshot_status_is_neither_woken_nor_passed_over() {
        let key = AgentKey::new(Kind::Codex, "studio-alice-01");
        let u = Some("studio-alice-01");
        let snaps = [
            snap("old", u, "Ready", "2026-12-01T00:00:00Z"),
            snap("odd", u, "Archiving", "2026-12-02T00:00:00Z"),
        ];
        assert_eq!(
            choose(
                &snaps,
                &key,
                None,
                None,
                None,
                std::time::Duration::from_secs(1800),
                at_ms("2026-12-02T00:01:00Z")
            ),
            Choice::Unknown {
                snapshot_id: "odd".into(),
                status: "Archiving".into()
            }
        );
    }

    #[test]
    fn a_snapshot_agent_wakes_from_its_own_snapshot() {
        let key = AgentKey::new(Kind::Codex, "snapshot-snap-9");
        let snaps = [
            snap("snap-8", None, "Ready", "2026-12-03T00:00:00Z"),
            snap("snap-9", None, "Ready", "2026-12-01T00:00:00Z"),
        ];
        assert_eq!(
            pick(&snaps, &key, None, None).and_then(|s| s.snapshot_id.as_deref()),
            Some("snap-9")
        );
    }
}
