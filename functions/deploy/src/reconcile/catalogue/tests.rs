//! Unit tests of `catalogue`.

use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn the_app_is_normalised_like_the_reference_studio() {
    assert_eq!(normalise_app("My  Studio!"), "my-studio");
    assert_eq!(normalise_app("--Ops_Team--"), "ops-team");
    assert_eq!(normalise_app("日本"), "studio");
    assert_eq!(normalise_app(""), "studio");
    let long = normalise_app("a-very-long-application-name-that-goes-on");
    assert!(long.len() <= 30 && !long.ends_with('-'), "{long}");
    assert_eq!(
        normalise_app("abcdefghijklmnopqrstuvwxyz123-x"),
        "abcdefghijklmnopqrstuvwxyz123"
    );
}

#[test]
fn names_carry_the_crc32_of_the_raw_app_name() {
    // crc32("studio") = 0x1b6d8ed3 (IEEE); raw names that normalise alike differ.
    assert_eq!(
        tool_name("studio", "chat-snapshot"),
        format!(
            "veadk-studio-studio-chat-snapshot-{:08x}",
            crc32fast::hash(b"studio")
        )
    );
    assert_eq!(crc32fast::hash(b"123456789"), 0xcbf4_3926);
    assert_ne!(tool_name("My App", "skill"), tool_name("my-app", "skill"));
    assert!(tool_name("My App", "skill").starts_with("veadk-studio-my-app-skill-"));
}

#[test]
fn the_default_catalogue_has_seven_entries() {
    let c = Catalogue::default_for(Some("Acme"));
    assert_eq!(c.entries.len(), 7);
    assert_eq!(c.entries.iter().filter(|e| e.recoverable).count(), 3);
    let hermes = c.entry(Kind::Hermes, Retention::Recoverable).unwrap();
    assert_eq!(hermes.tool_type, "HermesEnv");
    assert_eq!(hermes.model_agent_name.as_deref(), Some(MODEL_AGENT_NAME));
    let codex = c.entry(Kind::Codex, Retention::Temporary).unwrap();
    assert_eq!(codex.model_agent_name, None);
    assert!(codex.name.contains("-chat-temporary-"));
    let key = codex.api_key_name();
    assert!(key.starts_with("studio-") && key.len() == 23);
    assert_eq!(key, codex.api_key_name());
    assert_ne!(key, hermes.api_key_name());
}

#[test]
fn a_document_merges_over_the_defaults_and_env_wins_for_ids() {
    let doc = r#"{"app": "Doc App", "entries": [
        {"key": "codex", "tool_id": "t-doc"},
        {"key": "hermes_snapshot", "envs": {"B": "2", "A": {"from_env": "SECRET_A"}}},
        {"key": "extra", "tool_type": "CodeEnv", "purpose": "extra"}]}"#;
    let env = |k: &str| match k {
        "SECRET_A" => Some("s3cret".to_string()),
        "SNAPWAKE_TOOL_CODEX_SNAPSHOT" => Some("t-env".to_string()),
        _ => None,
    };
    let mut c = Catalogue::load(Some("ignored"), Some(doc), &env).unwrap();
    c.apply_overrides(&tool_overrides(&c, &env));
    assert_eq!(c.app, "Doc App");
    assert_eq!(c.entries.len(), 8);
    let codex = c.entry(Kind::Codex, Retention::Temporary).unwrap();
    assert_eq!(codex.tool_id.as_deref(), Some("t-doc"));
    assert_eq!(codex.id_source, Some(IdSource::Catalogue));
    let rec = c.entry(Kind::Codex, Retention::Recoverable).unwrap();
    assert_eq!(rec.tool_id.as_deref(), Some("t-env"));
    let hermes = c.entry(Kind::Hermes, Retention::Recoverable).unwrap();
    assert_eq!(hermes.envs.0[0].key, "A");
    assert_eq!(hermes.envs.0[0].value, "s3cret");
    assert!(!format!("{hermes:?}").contains("s3cret"));
}

#[test]
fn bad_documents_are_refused() {
    for doc in [
        r#"{"entries": [{"key": "new"}]}"#,
        r#"{"entries": [{"key": "Bad Key"}]}"#,
        r#"{"entries": [{"key": "codex", "tool_type": "HermesEnv"}]}"#,
        r#"{"entries": [{"key": "codex", "envs": {"A": {"from_env": "UNSET"}}}]}"#,
        r#"{"bogus": 1}"#,
        "not json",
    ] {
        assert!(Catalogue::load(None, Some(doc), &no_env).is_err(), "{doc}");
    }
}
