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
    crate::ambient::epoch_ms(ts).unwrap()
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
