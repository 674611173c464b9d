use super::*;

#[test]
fn pk_round_trips_with_hash_in_agent_id() {
    let key = AgentKey::new(Kind::Codex, "a#b#c");
    assert_eq!(agent_pk(&key), "AGENT#codex#a#b#c");
    assert_eq!(parse_agent_pk(&agent_pk(&key)).unwrap(), key);
    assert!(parse_agent_pk("AGENT#codex#").is_err());
    assert!(parse_agent_pk("AGENT#nope#x").is_err());
    assert!(parse_agent_pk("REGISTRY").is_err());
}

#[test]
fn cursor_round_trips_and_rejects_garbage() {
    let c = OwnerCursor {
        pk: "AGENT#codex#a".into(),
        sk: AGENT_SK.into(),
        gsi1pk: owner_gsi_pk("studio-x"),
        gsi1sk: "2026-01-01T00:00:00Z#codex#a".into(),
    };
    let s = c.encode();
    assert_eq!(OwnerCursor::decode(&s, "studio-x").unwrap(), c);
    assert!(matches!(
        OwnerCursor::decode(&s, "studio-y"),
        Err(StoreError::InvalidCursor(_))
    ));
    for bad in ["", "!!!", "e30", &BASE64URL_NOPAD.encode(b"[1,2]")] {
        assert!(matches!(
            OwnerCursor::decode(bad, "studio-x"),
            Err(StoreError::InvalidCursor(_))
        ));
    }
}
