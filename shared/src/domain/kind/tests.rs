use super::*;

#[test]
fn kinds_round_trip_through_names_and_tool_types() {
    for k in Kind::ALL {
        assert_eq!(k.as_str().parse::<Kind>(), Ok(k));
        assert_eq!(Kind::from_tool_type(k.tool_type()), Some(k));
        let json = serde_json::to_string(&k).unwrap();
        assert_eq!(json, format!("\"{}\"", k.as_str()));
    }
    assert_eq!(Kind::Codex.tool_type(), "CodeEnv");
    assert_eq!(Kind::Openclaw.tool_type(), "ArkClawEnv");
    assert_eq!(Kind::Hermes.tool_type(), "HermesEnv");
}

#[test]
fn kind_names_are_exact() {
    assert!("Codex".parse::<Kind>().is_err());
    assert!("".parse::<Kind>().is_err());
    assert!("codex ".parse::<Kind>().is_err());
    assert_eq!(Kind::from_tool_type("codeenv"), None);
}

#[test]
fn retention_parses_and_maps_to_snapshots() {
    assert_eq!("recoverable".parse(), Ok(Retention::Recoverable));
    assert_eq!("temporary".parse(), Ok(Retention::Temporary));
    assert!("Temporary".parse::<Retention>().is_err());
    assert!(Retention::Recoverable.enable_snapshot());
    assert!(!Retention::Temporary.enable_snapshot());
}
