//! Unit tests of the world: expiry into snapshots, index upkeep, and ids.

use super::*;
use snapwake::agentkit::types::MetadataEntry;
use std::time::Duration;
use time::macros::datetime;
use time::OffsetDateTime;

fn world_with_tool(recoverable: bool) -> (World, String, OffsetDateTime) {
    let mut w = World::new(1, Duration::ZERO, Duration::ZERO);
    let now = datetime!(2026-12-02 10:00:00 UTC);
    let t = w
        .seed_tool(
            "cn-beijing",
            SeedTool {
                name: "n".into(),
                tool_type: "CodeEnv".into(),
                enable_snapshot: recoverable,
                ..Default::default()
            },
            now,
        )
        .unwrap();
    (w, t, now)
}

#[test]
fn expiry_on_a_recoverable_tool_leaves_a_snapshot_and_indexes_it() {
    let (mut w, t, now) = world_with_tool(true);
    let meta = vec![MetadataEntry::string("Username", "alice")];
    let s = w.start_session(
        &t,
        Some("u-1".into()),
        meta.clone(),
        time::Duration::hours(1),
        now,
    );
    w.tick(now + time::Duration::minutes(59));
    assert!(w.sessions.contains_key(&s.id));
    w.tick(now + time::Duration::hours(2));
    assert!(w.sessions.is_empty() && w.sessions_by_tool.is_empty());
    let snap = w.snapshots.values().next().unwrap();
    assert_eq!(snap.session_id.as_deref(), Some(s.id.as_str()));
    assert_eq!(snap.created_at, s.expire_at);
    assert_eq!(snap.metadata, meta);
    assert_eq!(w.snapshots_by_usid["u-1"].len(), 1);
    let id = snap.id.clone();
    w.remove_snapshot(&id).unwrap();
    assert!(w.snapshots_by_usid.is_empty() && w.snapshots_by_tool.is_empty());
}

#[test]
fn expiry_on_a_temporary_tool_leaves_nothing() {
    let (mut w, t, now) = world_with_tool(false);
    w.start_session(
        &t,
        Some("u-1".into()),
        vec![],
        time::Duration::hours(1),
        now,
    );
    w.tick(now + time::Duration::hours(2));
    assert!(w.sessions.is_empty() && w.snapshots.is_empty());
}

#[test]
fn ids_are_unique_and_repeatable_for_a_seed() {
    let mut a = World::new(5, Duration::ZERO, Duration::ZERO);
    let mut b = World::new(5, Duration::ZERO, Duration::ZERO);
    assert_eq!(a.fresh_id("x"), b.fresh_id("x"));
    assert!(a.explicit_id(Some(String::new()), "x").is_err());
}
