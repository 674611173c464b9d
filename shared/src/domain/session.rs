//! How AgentKit session and snapshot statuses read: classified once, here.
//!
//! Statuses arrive as free strings in whatever case the service uses, and the set is open:
//! AgentKit may answer a status nobody wrote down. Each status falls in exactly one phase
//! (docs/wake-protocol.md, "AgentKit keeps its own time"); anything unrecognised is
//! [`SessionPhase::Unknown`], which every path treats as "something is there, and we do not
//! know what": never woken, created or deleted beside automatically, never mistaken for "no
//! session".

/// A session starting up: alive, not yet usable.
const STARTING: [&str; 4] = ["creating", "starting", "initializing", "pending"];
/// A session that can be handed to a person (with an endpoint).
const USABLE: [&str; 2] = ["ready", "running"];
/// A session that is over.
const ENDED: [&str; 6] = [
    "failed",
    "error",
    "stopped",
    "terminated",
    "expired",
    "deleted",
];

/// What a session's status says about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionPhase {
    /// Creating, Starting, Initializing, Pending (or Ready/Running without an endpoint yet).
    Starting,
    /// Ready or Running, with an endpoint.
    Usable,
    /// Failed, Error, Stopped, Terminated, Expired, Deleted (and, by the caller, not found).
    Ended,
    /// A status outside the sets above (or none at all).
    Unknown,
}

impl SessionPhase {
    /// Classify `status` (case-insensitive); `has_endpoint` decides whether a Ready session is
    /// usable yet.
    pub fn of(status: Option<&str>, has_endpoint: bool) -> SessionPhase {
        let Some(s) = status else {
            return SessionPhase::Unknown;
        };
        let is = |set: &[&str]| set.iter().any(|a| a.eq_ignore_ascii_case(s));
        if is(&USABLE) {
            if has_endpoint {
                SessionPhase::Usable
            } else {
                SessionPhase::Starting
            }
        } else if is(&STARTING) {
            SessionPhase::Starting
        } else if is(&ENDED) {
            SessionPhase::Ended
        } else {
            SessionPhase::Unknown
        }
    }

    /// Something may be running: never start another session beside it.
    pub fn occupies(self) -> bool {
        self != SessionPhase::Ended
    }
}

/// A session whose status is anything but ended occupies its agent: never start another for
/// the same agent beside it (an unknown status included).
pub fn is_session_active(status: Option<&str>) -> bool {
    SessionPhase::of(status, true).occupies()
}

/// A session can be handed to a person: `Ready` or `Running`, and it has an endpoint.
pub fn is_session_usable(status: Option<&str>, has_endpoint: bool) -> bool {
    SessionPhase::of(status, has_endpoint) == SessionPhase::Usable
}

/// The `Reason` AgentKit gives the snapshot it keeps of a session its clock ended (compared
/// without case).
pub const REASON_EXPIRED: &str = "Expired";

/// What a snapshot's status says about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotPhase {
    /// `Creating` or `Pending`: still being made.
    InProgress,
    /// `Ready`: can be resumed.
    Ready,
    /// `Failed` or `Error`: will never be Ready.
    Failed,
    /// Anything else (or none).
    Unknown,
}

impl SnapshotPhase {
    /// Classify `status` (case-insensitive).
    pub fn of(status: Option<&str>) -> SnapshotPhase {
        let Some(s) = status else {
            return SnapshotPhase::Unknown;
        };
        let is = |set: &[&str]| set.iter().any(|a| a.eq_ignore_ascii_case(s));
        if is(&["ready"]) {
            SnapshotPhase::Ready
        } else if is(&["creating", "pending"]) {
            SnapshotPhase::InProgress
        } else if is(&["failed", "error"]) {
            SnapshotPhase::Failed
        } else {
            SnapshotPhase::Unknown
        }
    }
}

/// A snapshot can be resumed only when it is `Ready`.
pub fn is_snapshot_wakeable(status: Option<&str>) -> bool {
    SnapshotPhase::of(status) == SnapshotPhase::Ready
}

/// A snapshot still being made: `Creating` or `Pending`. A sleep waits on these, and so does a
/// wake whose newest snapshot is one.
pub fn is_snapshot_in_progress(status: Option<&str>) -> bool {
    SnapshotPhase::of(status) == SnapshotPhase::InProgress
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_status_has_its_phase_in_any_case() {
        for s in ["Creating", "STARTING", "initializing", "Pending"] {
            assert_eq!(
                SessionPhase::of(Some(s), true),
                SessionPhase::Starting,
                "{s}"
            );
        }
        for s in ["Ready", "running", "RUNNING"] {
            assert_eq!(SessionPhase::of(Some(s), true), SessionPhase::Usable, "{s}");
            // Not handed over without an endpoint: still starting.
            assert_eq!(
                SessionPhase::of(Some(s), false),
                SessionPhase::Starting,
                "{s}"
            );
        }
        for s in [
            "Failed",
            "error",
            "Stopped",
            "TERMINATED",
            "Expired",
            "deleted",
        ] {
            assert_eq!(SessionPhase::of(Some(s), true), SessionPhase::Ended, "{s}");
        }
        for s in ["Paused", "Deleting", "weird", ""] {
            assert_eq!(
                SessionPhase::of(Some(s), true),
                SessionPhase::Unknown,
                "{s}"
            );
        }
        assert_eq!(SessionPhase::of(None, true), SessionPhase::Unknown);
    }

    #[test]
    fn an_unknown_status_occupies_its_agent() {
        for s in ["Creating", "Ready", "Paused", "weird"] {
            assert!(is_session_active(Some(s)), "{s}");
        }
        for s in ["Failed", "Stopped", "Expired", "Deleted"] {
            assert!(!is_session_active(Some(s)), "{s}");
        }
        assert!(is_session_active(None));
    }

    #[test]
    fn usable_needs_ready_or_running_and_an_endpoint() {
        assert!(is_session_usable(Some("Ready"), true));
        assert!(is_session_usable(Some("Running"), true));
        assert!(!is_session_usable(Some("Ready"), false));
        assert!(!is_session_usable(Some("Paused"), true));
    }

    #[test]
    fn snapshot_phases() {
        assert!(is_snapshot_wakeable(Some("Ready")));
        assert!(!is_snapshot_wakeable(Some("Creating")));
        assert!(!is_snapshot_wakeable(None));
        assert!(is_snapshot_in_progress(Some("CREATING")));
        assert!(is_snapshot_in_progress(Some("Pending")));
        for s in ["Ready", "Failed", "weird", ""] {
            assert!(!is_snapshot_in_progress(Some(s)), "{s}");
        }
        assert_eq!(SnapshotPhase::of(Some("Failed")), SnapshotPhase::Failed);
        assert_eq!(SnapshotPhase::of(Some("ERROR")), SnapshotPhase::Failed);
        assert_eq!(SnapshotPhase::of(Some("Archived")), SnapshotPhase::Unknown);
        assert_eq!(SnapshotPhase::of(None), SnapshotPhase::Unknown);
    }
}
