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
