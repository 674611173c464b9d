use super::*;

fn status(err: Error) -> u16 {
    match err {
        Error::InvalidRequest { status, .. } => status,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn display_name_takes_the_first_that_exists() {
    let legacy = Some("studio2-2bd806c97f0e00af-random-QWxpY2UgT2xk");
    assert_eq!(
        display_name(Some("Rec"), Some("Meta"), legacy, Some("snap")),
        "Rec"
    );
    assert_eq!(
        display_name(Some(" "), Some("Meta"), legacy, Some("snap")),
        "Meta"
    );
    assert_eq!(display_name(None, None, legacy, Some("snap")), "Alice Old");
    assert_eq!(
        display_name(None, Some(""), Some("studio-alice-0f3c"), Some("snap")),
        "studio-alice-0f3c"
    );
    // An empty legacy name is skipped in favour of the raw id.
    assert_eq!(
        display_name(None, None, Some("studio2-2bd806c97f0e00af-r-"), None),
        "studio2-2bd806c97f0e00af-r-"
    );
    assert_eq!(display_name(None, None, None, Some("snap-1")), "snap-1");
    assert_eq!(display_name(None, None, None, None), "");
}

#[test]
fn display_names_are_trimmed_and_bounded_in_characters() {
    assert_eq!(
        validate_display_name("  Data helper \n").unwrap(),
        "Data helper"
    );
    let forty_cjk = "助".repeat(40);
    assert_eq!(validate_display_name(&forty_cjk).unwrap(), forty_cjk);
    assert_eq!(
        status(validate_display_name(&"助".repeat(41)).unwrap_err()),
        422
    );
    assert_eq!(status(validate_display_name("   ").unwrap_err()), 422);
    assert_eq!(status(validate_display_name("").unwrap_err()), 422);
    assert_eq!(status(validate_display_name("a\u{7}b").unwrap_err()), 422);
    assert_eq!(status(validate_display_name("a\nb").unwrap_err()), 422);
    assert_eq!(validate_display_name("🦀 crab").unwrap(), "🦀 crab");
}

#[test]
fn agent_ids_follow_the_route_pattern() {
    for ok in [
        "a",
        "studio-alice-0f3c",
        "snapshot-snap_1.2:3",
        "studio2-2bd806c97f0e00af-random-QWxpY2UgT2xk",
        &"x".repeat(200),
    ] {
        assert!(is_valid_agent_id(ok), "{ok:?}");
        assert_eq!(validate_agent_id(ok).unwrap(), ok);
    }
    for bad in ["", "a/b", "a b", "é", "a%2F", "a=b", &"x".repeat(201)] {
        assert!(!is_valid_agent_id(bad), "{bad:?}");
        assert_eq!(status(validate_agent_id(bad).unwrap_err()), 400);
    }
}
