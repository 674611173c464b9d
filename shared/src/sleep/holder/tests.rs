//! Unit tests of `holder`.

use super::*;
use crate::domain::{AgentKey, AgentRecord, Kind};

fn snap(id: &str, at: &str) -> Snapshot {
    Snapshot {
        snapshot_id: Some(id.into()),
        created_at: Some(at.into()),
        ..Snapshot::default()
    }
}

#[test]
fn only_an_unfinished_sleep_of_the_same_session_is_adopted() {
    let mut before = AgentRecord::absent(AgentKey::new(Kind::Codex, "studio-alice-01"));
    before.session_id = Some("s-1".into());
    before.updated_at = Some("2026-12-02T10:00:00Z".into());
    // At rest (given back awake, or woken since): nothing is adopted.
    for state in [WakeState::Awake, WakeState::Asleep, WakeState::Waking] {
        before.state = state;
        assert_eq!(unfinished(Some(&before), "s-1"), None, "{state}");
    }
    before.state = WakeState::Sleeping;
    assert_eq!(unfinished(Some(&before), "s-2"), None, "another session");
    let since = unfinished(Some(&before), "s-1").unwrap();
    let skew = std::time::Duration::from_secs(2);
    assert!(since.took(&snap("new", "2026-12-02T10:00:01Z"), skew));
    assert!(since.took(&snap("same-second", "2026-12-02T09:59:58Z"), skew));
    assert!(!since.took(&snap("an-hour-old", "2026-12-02T09:00:00Z"), skew));
    before.snapshot_id = Some("named".into());
    let named = unfinished(Some(&before), "s-1").unwrap();
    assert!(named.took(&snap("named", "2026-12-02T09:00:00Z"), skew));
    assert!(!named.took(&snap("other", "2026-12-02T10:00:01Z"), skew));
    assert_eq!(unfinished(None, "s-1"), None);
}
