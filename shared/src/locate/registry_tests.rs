use super::*;
use crate::domain::KindTools;

#[test]
fn overrides_win_over_the_stored_registry() {
    let mut stored = ToolRegistry::default();
    stored.kinds.insert(
        Kind::Codex,
        KindTools {
            temporary: Some("t-temp".into()),
            recoverable: Some("t-rec".into()),
            legacy_snapshot_tools: vec!["t-old".into()],
        },
    );
    let env = |k: &str| match k {
        "SNAPWAKE_TOOL_CODEX_SNAPSHOT" => Some("t-pinned".to_string()),
        "SNAPWAKE_TOOL_HERMES" => Some(" t-h ".to_string()),
        "SNAPWAKE_TOOL_OPENCLAW" => Some("".to_string()),
        _ => None,
    };
    let r = ToolOverrides::from_lookup(env).apply(stored);
    assert_eq!(
        r.tool(Kind::Codex, Retention::Recoverable),
        Some("t-pinned")
    );
    assert_eq!(r.tool(Kind::Codex, Retention::Temporary), Some("t-temp"));
    assert_eq!(r.tool(Kind::Hermes, Retention::Temporary), Some("t-h"));
    assert_eq!(r.tool(Kind::Openclaw, Retention::Temporary), None);
    assert!(r.is_snapshot_tool(Kind::Codex, "t-old"));
}
