//! How AgentKit session and snapshot statuses read.
//!
//! Statuses arrive as free strings in whatever case the service uses; they are compared
//! case-insensitively, and anything unknown counts as neither active nor usable, so a new
//! status never wakes a second sandbox by being mistaken for "no session".

const ACTIVE: [&str; 6] = [
    "creating",
    "starting",
    "initializing",
    "pending",
    "ready",
    "running",
];

/// A session in one of these statuses is alive (or about to be): never start another for the
/// same agent.
pub fn is_session_active(status: Option<&str>) -> bool {
    status.is_some_and(|s| ACTIVE.iter().any(|a| a.eq_ignore_ascii_case(s)))
}

/// A session can be handed to a person: `Ready` and it has an endpoint.
pub fn is_session_usable(status: Option<&str>, has_endpoint: bool) -> bool {
    has_endpoint && status.is_some_and(|s| s.eq_ignore_ascii_case("ready"))
}

/// A snapshot can be resumed only when it is `Ready`.
pub fn is_snapshot_wakeable(status: Option<&str>) -> bool {
    status.is_some_and(|s| s.eq_ignore_ascii_case("ready"))
}

/// A snapshot still being made (after CreateSessionSnapshot): `Creating` or `Pending`. A sleep
/// waits on these; any other status but `Ready` is a snapshot that will not become Ready (and
/// the session it was taken of is not ended).
pub fn is_snapshot_in_progress(status: Option<&str>) -> bool {
    status.is_some_and(|s| {
        ["creating", "pending"]
            .iter()
            .any(|a| a.eq_ignore_ascii_case(s))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_statuses_are_case_insensitive() {
        for s in [
            "Creating",
            "STARTING",
            "initializing",
            "Pending",
            "Ready",
            "running",
        ] {
            assert!(is_session_active(Some(s)), "{s}");
        }
        for s in [
            "Failed", "error", "Stopped", "Expired", "Deleting", "deleted", "weird", "",
        ] {
            assert!(!is_session_active(Some(s)), "{s}");
        }
        assert!(!is_session_active(None));
    }

    #[test]
    fn usable_needs_ready_and_endpoint() {
        assert!(is_session_usable(Some("Ready"), true));
        assert!(!is_session_usable(Some("Ready"), false));
        assert!(!is_session_usable(Some("Running"), true));
        assert!(is_snapshot_wakeable(Some("Ready")));
        assert!(!is_snapshot_wakeable(Some("Creating")));
        assert!(!is_snapshot_wakeable(None));
        assert!(is_snapshot_in_progress(Some("CREATING")));
        assert!(is_snapshot_in_progress(Some("Pending")));
        for s in ["Ready", "Failed", "weird", ""] {
            assert!(!is_snapshot_in_progress(Some(s)), "{s}");
        }
        assert!(!is_snapshot_in_progress(None));
    }
}
