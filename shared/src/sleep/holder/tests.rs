//! Unit tests of `holder`.

use super::*;

fn snap(id: &str, at: &str) -> Snapshot {
    Snapshot {
        snapshot_id: Some(id.into()),
        created_at: Some(at.into()),
        ..Snapshot::default()
    }
}

#[test]
fn a_lost_answer_is_matched_only_by_a_snapshot_taken_since_it_was_sent() {
    let sent = crate::ambient::epoch_ms("2026-12-02T10:00:00Z").unwrap();
    let skew = std::time::Duration::from_secs(2);
    assert!(taken_since_ms(
        &snap("new", "2026-12-02T10:00:01Z"),
        sent,
        skew
    ));
    assert!(taken_since_ms(
        &snap("same-second", "2026-12-02T09:59:58Z"),
        sent,
        skew
    ));
    assert!(!taken_since_ms(
        &snap("an-hour-old", "2026-12-02T09:00:00Z"),
        sent,
        skew
    ));
}
