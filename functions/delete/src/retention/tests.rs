use super::*;

const DAY_MS: u64 = 24 * 3600 * 1000;
/// 2026-12-10T00:00:00Z
const NOW: u64 = 1_796_860_800_000;

fn snap(id: &str, status: &str, days_ago: u64) -> Snapshot {
    Snapshot {
        snapshot_id: Some(id.into()),
        status: Some(status.into()),
        created_at: Some(snapwake::ambient::format_ms(NOW - days_ago * DAY_MS)),
        ..Snapshot::default()
    }
}

fn ids(pruned: Vec<&Snapshot>) -> Vec<&str> {
    pruned
        .into_iter()
        .filter_map(|s| s.snapshot_id.as_deref())
        .collect()
}

fn policy(keep: usize, max_age_days: Option<u64>) -> RetentionPolicy {
    RetentionPolicy {
        keep,
        max_age: days(max_age_days),
        max_idle: None,
    }
}

#[test]
fn the_newest_three_ready_snapshots_stay() {
    let policy = RetentionPolicy::default();
    let snaps: Vec<Snapshot> = (1..=6)
        .map(|d| snap(&format!("s{d}"), "Ready", d))
        .collect();
    assert_eq!(ids(policy.to_prune(&snaps, NOW)), ["s6", "s5", "s4"]);
    // Three or fewer: nothing to do.
    assert!(policy.to_prune(&snaps[..3], NOW).is_empty());
}

#[test]
fn snapshots_that_are_not_ready_do_not_count_and_older_ones_are_not_counted_out() {
    let policy = RetentionPolicy::default();
    let snaps = vec![
        snap("creating", "Creating", 0),
        snap("r1", "Ready", 1),
        snap("failed", "Failed", 2),
        snap("r2", "Ready", 3),
        snap("r3", "Ready", 4),
        snap("r4", "Ready", 5),
    ];
    assert_eq!(ids(policy.to_prune(&snaps, NOW)), ["r4"]);
}

#[test]
fn the_way_back_and_everything_newer_survive_every_rule() {
    // Everything ancient, keep 1: the newest Ready one and the newer ones stay.
    let policy = policy(1, Some(30));
    let snaps = vec![
        snap("creating", "Creating", 90),
        snap("failed-newer", "Failed", 95),
        snap("way-back", "Ready", 100),
        snap("failed-older", "Failed", 150),
        snap("older", "Ready", 200),
    ];
    assert_eq!(ids(policy.to_prune(&snaps, NOW)), ["older", "failed-older"]);
    // An agent with no Ready snapshot keeps everything: the newest may still become one.
    let none_ready = vec![snap("c", "Creating", 90), snap("f", "Failed", 100)];
    assert!(policy.to_prune(&none_ready, NOW).is_empty());
}

#[test]
fn old_snapshots_go_but_never_the_way_back() {
    let policy = policy(3, Some(30));
    let snaps = vec![
        snap("recent", "Ready", 10),
        snap("old", "Ready", 40),
        snap("older", "Failed", 50),
    ];
    assert_eq!(ids(policy.to_prune(&snaps, NOW)), ["older", "old"]);
    let ancient = vec![snap("a1", "Ready", 100), snap("a2", "Ready", 200)];
    assert_eq!(ids(policy.to_prune(&ancient, NOW)), ["a2"]);
}

#[test]
fn times_are_instants_and_unreadable_ones_are_never_pruned() {
    let policy = policy(1, None);
    let mut a = snap("a", "Ready", 0);
    // The same instant as text would sort before "…Z" of an earlier time.
    a.created_at = Some("2026-12-10T02:00:00+02:00".into());
    let b = snap("b", "Ready", 1);
    let mut c = snap("c", "Ready", 2);
    c.created_at = Some("last week".into());
    let snaps = [b, a, c];
    assert_eq!(ids(policy.to_prune(&snaps, NOW)), ["b"]);
}

#[test]
fn within_one_second_the_snapshot_listed_later_is_the_newer() {
    let policy = policy(1, None);
    let first = snap("first", "Ready", 1);
    let second = snap("second", "Ready", 1);
    assert_eq!(
        ids(policy.to_prune(&[first.clone(), second.clone()], NOW)),
        ["first"]
    );
    assert_eq!(ids(policy.to_prune(&[second, first], NOW)), ["second"]);
}

#[test]
fn an_agent_is_idle_only_asleep_and_with_every_snapshot_older_than_the_limit() {
    let idle = RetentionPolicy {
        max_idle: days(Some(60)),
        ..RetentionPolicy::default()
    };
    let old = vec![snap("a", "Ready", 61), snap("b", "Failed", 90)];
    assert!(idle.is_idle(&old, false, NOW));
    // Awake, a recent snapshot, no snapshot, an unreadable date, no limit: not idle.
    assert!(!idle.is_idle(&old, true, NOW));
    let mut recent = old.clone();
    recent.push(snap("c", "Creating", 1));
    assert!(!idle.is_idle(&recent, false, NOW));
    assert!(!idle.is_idle(&[], false, NOW));
    let mut undated = old.clone();
    undated[0].created_at = Some("yesterday".into());
    assert!(!idle.is_idle(&undated, false, NOW));
    assert!(!RetentionPolicy::default().is_idle(&old, false, NOW));
}
