use super::*;
use crate::agentkit::types::MetadataEntry;
use crate::domain::Kind;

fn snap(id: &str, status: &str, at: &str) -> Snapshot {
    Snapshot {
        snapshot_id: Some(id.into()),
        status: Some(status.into()),
        created_at: Some(at.into()),
        session_metadata: vec![MetadataEntry::string("veadk_display_name", "Helper")],
        ..Snapshot::default()
    }
}

#[test]
fn asleep_with_newest_snapshot_first_and_metadata_name() {
    let key = AgentKey::new(Kind::Codex, "studio-alice-0123");
    let snaps = [
        snap("old", "Ready", "2026-12-01T01:00:00Z"),
        snap("new", "Ready", "2026-12-01T09:00:00Z"),
    ];
    let v = agent_view(
        &AgentFacts {
            key: &key,
            record: None,
            sessions: &[],
            snapshots: &snaps,
            retention: Retention::Recoverable,
            open_url: None,
        },
        0,
        &LockSettings::default(),
    );
    assert_eq!(v.state, AgentState::Asleep);
    assert_eq!(v.snapshots[0].snapshot_id, "new");
    assert_eq!(v.display_name, "Helper");
    assert!(v.etag.is_none() && v.wake.is_none() && v.session.is_none());
}

#[test]
fn waking_failed_awake_starting_unavailable() {
    let key = AgentKey::new(Kind::Codex, "studio-alice-0123");
    let mut rec = AgentRecord::absent(key.clone());
    rec.state = WakeState::Waking;
    rec.lease_until_ms = 10_000;
    rec.version = 3;
    let settings = LockSettings::default();
    let facts = |r: Option<&AgentRecord>, sessions: &[Session], snaps: &[Snapshot], now| {
        agent_view(
            &AgentFacts {
                key: &key,
                record: r,
                sessions,
                snapshots: snaps,
                retention: Retention::Recoverable,
                open_url: None,
            },
            now,
            &settings,
        )
    };
    let v = facts(Some(&rec), &[], &[], 5_000);
    assert_eq!(v.state, AgentState::Waking);
    assert_eq!(v.etag.as_deref(), Some("\"3\""));
    // The lease ran out (beyond the skew margin): no longer waking.
    assert_eq!(
        facts(Some(&rec), &[], &[], 20_000).state,
        AgentState::Unavailable
    );
    rec.state = WakeState::Failed;
    rec.error = Some("PROVIDER_ERROR: AgentKit said: parse error at line 1 column 7".into());
    let snaps = [snap("s", "Ready", "2026-12-01T01:00:00Z")];
    let v = facts(Some(&rec), &[], &snaps, 5_000);
    assert_eq!(v.state, AgentState::Asleep);
    let wake = v.wake.unwrap();
    assert_eq!(wake.state, "failed");
    assert_eq!(wake.error_code.as_deref(), Some("PROVIDER_ERROR"));
    let words = wake.error.unwrap();
    assert!(
        !words.contains("line 1") && !words.contains("AgentKit said"),
        "{words}"
    );
    let running = Session {
        session_id: Some("s-1".into()),
        status: Some("Creating".into()),
        endpoint: Some("https://secret.example/?auth=x".into()),
        ..Session::default()
    };
    let v = facts(None, std::slice::from_ref(&running), &[], 0);
    assert_eq!(v.state, AgentState::Starting);
    let json = serde_json::to_string(&v).unwrap();
    assert!(!json.contains("secret.example"), "no endpoint in a view");
}
