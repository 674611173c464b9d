//! Unit tests of `types`.

use super::*;

#[test]
fn requests_use_pascal_case_and_omit_absent_fields() {
    let req = ListSessions {
        tool_id: "t-1".into(),
        max_results: Some(10),
        metadata: Some(vec![MetadataFilter {
            key: "Username".into(),
            value: "alice".into(),
        }]),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_string(&req).unwrap(),
        r#"{"ToolId":"t-1","MaxResults":10,"Metadata":[{"Key":"Username","Value":"alice"}]}"#
    );
    let resume = ResumeSessionFromSnapshot::new("t-1", "snap-1");
    assert_eq!(
        serde_json::to_string(&resume).unwrap(),
        r#"{"ToolId":"t-1","SnapshotId":"snap-1","Ttl":28800,"CreateNewInstance":false}"#
    );
}

#[test]
fn results_tolerate_missing_and_unknown_fields() {
    let s: Snapshot =
        serde_json::from_str(r#"{"SnapshotId":"x","Brand":"new","SessionMetadata":[{"Key":"veadk_display_name","Value":"n"}]}"#)
            .unwrap();
    assert_eq!(s.snapshot_id.as_deref(), Some("x"));
    assert_eq!(
        metadata_value(&s.session_metadata, "veadk_display_name"),
        Some("n")
    );
    assert!(!s.is_wakeable());
    let r: ListSessionsResult = serde_json::from_str("{}").unwrap();
    assert!(r.session_infos.is_empty() && r.next_token.is_none());
}
