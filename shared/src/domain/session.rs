//! How AgentKit session and snapshot statuses read: classified once, here (docs/wake-protocol.md,
//! "AgentKit keeps its own time"). Statuses are free strings in any case, and the set is open:
//! anything unrecognised is [`SessionPhase::Unknown`], "something is there, we do not know
//! what", never mistaken for "no session".

const STARTING: [&str; 4] = ["creating", "starting", "initializing", "pending"];
const USABLE: [&str; 2] = ["ready", "running"];
const ENDED: [&str; 6] = [
    "failed",
    "error",
    "stopped",
    "terminated",
    "expired",
    "deleted",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionPhase {
    /// Creating, Starting, Initializing, Pending (or Ready/Running without an endpoint yet).
    Starting,
    Usable,
    /// Failed, Error, Stopped, Terminated, Expired, Deleted (and, by the caller, not found).
    Ended,
    /// A status outside the sets above (or none at all).
    Unknown,
}

impl SessionPhase {
    /// Classify `status` (any case); a Ready session without an endpoint is still starting.
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

    /// Anything but ended, unknown included, may be running: never start another beside it.
    pub fn occupies(self) -> bool {
        self != SessionPhase::Ended
    }
}

pub fn is_session_active(status: Option<&str>) -> bool {
    SessionPhase::of(status, true).occupies()
}

pub fn is_session_usable(status: Option<&str>, has_endpoint: bool) -> bool {
    SessionPhase::of(status, has_endpoint) == SessionPhase::Usable
}

/// The `Reason` AgentKit gives the snapshot of a session its clock ended (compare in any case).
pub const REASON_EXPIRED: &str = "Expired";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotPhase {
    InProgress,
    Ready,
    /// `Failed` or `Error`: will never be Ready.
    Failed,
    Unknown,
}

impl SnapshotPhase {
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

pub fn is_snapshot_wakeable(status: Option<&str>) -> bool {
    SnapshotPhase::of(status) == SnapshotPhase::Ready
}

/// Still being made: a sleep waits on such a snapshot, and so does a wake whose newest it is.
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
