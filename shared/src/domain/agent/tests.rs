use super::*;

#[test]
fn view_serialises_in_the_documented_shape() {
    let view = AgentView {
        kind: Kind::Codex,
        agent_id: "studio-alice-0f3c".into(),
        display_name: "Data helper".into(),
        owner: Some("alice".into()),
        created_by: Some("alice@example.com".into()),
        retention: Retention::Recoverable,
        state: AgentState::Asleep,
        session: None,
        snapshots: vec![SnapshotView {
            snapshot_id: "snap-1".into(),
            source_session_id: Some("s-1".into()),
            status: Some("Ready".into()),
            reason: Some("Expired".into()),
            created_at: Some("2026-12-01T00:00:00Z".into()),
        }],
        wake: None,
        etag: Some("\"7\"".into()),
        as_of: None,
        open_url: None,
        schedule: None,
        idle_minutes: None,
        idle_sleep_at: None,
    };
    let v = serde_json::to_value(&view).unwrap();
    assert_eq!(v["kind"], "codex");
    assert_eq!(v["retention"], "recoverable");
    assert_eq!(v["state"], "asleep");
    assert!(v["session"].is_null());
    assert!(v["wake"].is_null());
    assert_eq!(v["snapshots"][0]["source_session_id"], "s-1");
    assert_eq!(v["etag"], "\"7\"");
    let back: AgentView = serde_json::from_value(v).unwrap();
    assert_eq!(back, view);
}
