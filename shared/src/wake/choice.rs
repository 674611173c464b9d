//! Step 4 of the holder's path (docs/wake-protocol.md): which snapshot a wake resumes, decided
//! from a listing of the agent's own snapshots and what the record expects.

use crate::agentkit::types::Snapshot;
use crate::domain::{AgentKey, SnapshotPhase};
use crate::locate::is_own;

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

#[cfg(test)]
mod tests;
