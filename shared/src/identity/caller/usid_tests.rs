use super::*;

#[test]
fn parse_tells_the_shapes_apart() {
    assert_eq!(
        UserSessionId::parse("studio-alice-0123abcd"),
        UserSessionId::Current {
            safe_owner: "alice".into(),
            rest: "0123abcd".into()
        }
    );
    assert_eq!(
        UserSessionId::parse("studio-1b4e28ba-2fa1-11d2-883f-0016d3cca427").format_name(),
        "older"
    );
    assert_eq!(
        UserSessionId::parse("studio-1B4E28BA-2FA1-11D2-883F-0016D3CCA427").format_name(),
        "older"
    );
    // One group too long: not a UUID, so the first group reads as a safe owner.
    assert_eq!(
        UserSessionId::parse("studio-1b4e28ba-2fa1-11d2-883f-0016d3cca4270").owner_key(),
        Some("studio-1b4e28ba".into())
    );
    for unowned in [
        "",
        "studio-",
        "studio-alice",
        "studio-alice-",
        "studio--x",
        "studio-a.b-x",
        "studio-0123456789abcdef0123456789abcdef",
        "snapshot-abc",
        "studio2-2bd806c97f0e00af-random",
        "studio2-2BD806C97F0E00AF-r-QQ",
        "studio2-2bd806c97f0e00a-r-QQ",
    ] {
        let parsed = UserSessionId::parse(unowned);
        assert_eq!(parsed, UserSessionId::Unowned, "{unowned:?}");
        assert_eq!(parsed.owner_key(), None);
    }
}

#[test]
fn legacy_names_decode_or_own_nothing() {
    let id = UserSessionId::parse("studio2-2bd806c97f0e00af-r-");
    assert_eq!(id.legacy_name(), Some(""));
    assert_eq!(id.owner_key(), Some("studio2-2bd806c97f0e00af".into()));
    // `!` is not base64url; `_w` decodes to 0xff, which is not UTF-8.
    for bad in [
        "studio2-2bd806c97f0e00af-r-!!",
        "studio2-2bd806c97f0e00af-r-_w",
    ] {
        let id = UserSessionId::parse(bad);
        assert_eq!(id.format_name(), "legacy");
        assert_eq!(id.legacy_name(), None);
        assert_eq!(id.owner_key(), None);
        assert!(!belongs_to(bad, "alice"));
    }
}

#[test]
fn an_empty_owner_encodes_to_u_() {
    assert_eq!(safe_owner(""), "u_");
    assert_eq!(prefix(""), "studio-u_-");
}

#[test]
fn minted_ids_have_the_documented_shape() {
    let id = mint("alice");
    let hex = id.strip_prefix("studio-alice-").unwrap();
    assert_eq!(hex.len(), 32);
    assert!(hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_ne!(mint("alice"), id);
}
