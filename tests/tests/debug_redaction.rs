//! `{:?}` of every type that holds a credential, a token, a key, a signature or a session
//! Endpoint shows none of them (docs/security.md, "Secrets in Debug"). Nothing logs these types
//! today; this keeps a `tracing::debug!(?config)` added tomorrow from leaking.
//!
//! Each type is built from canary values the way the code builds it (from the environment,
//! from the wire, by signing), then formatted with `{:?}` and `{:#?}`.

use snapwake::agentkit::signer;
use snapwake::agentkit::types::{
    CreateSessionResult, CreateTool, EnvVar, GetSessionSnapshotResult, ListSessionsResult, Session,
    Tool, UpdateTool,
};
use snapwake::agentkit::{AgentKitClient, Credentials};
use snapwake::config::Config;
use snapwake_deploy::reconcile::catalogue::Catalogue;
use snapwake_list::ListSettings;
use snapwake_sim::signature::parse_authorization;
use time::macros::datetime;

const SECRET_KEY: &str = "canary-SECRET-KEY-3f9a";
const SESSION_TOKEN: &str = "canary-SESSION-TOKEN-c41d";
const AWS_TOKEN: &str = "canary-AWS-TOKEN-77b2";
const CURSOR_KEY: &str = "canary-CURSOR-KEY-of-at-least-32-chars-0e5f";
const ENDPOINT_AUTH: &str = "canary-ENDPOINT-AUTH-9d03";
const ENV_SECRET: &str = "canary-TOOL-ENV-SECRET-2b8e";

/// Every canary, and nothing else: a formatted value must contain none.
const CANARIES: [&str; 6] = [
    SECRET_KEY,
    SESSION_TOKEN,
    AWS_TOKEN,
    CURSOR_KEY,
    ENDPOINT_AUTH,
    ENV_SECRET,
];

#[track_caller]
fn assert_redacted(what: &str, value: &impl std::fmt::Debug, also: &[&str]) {
    for text in [format!("{value:?}"), format!("{value:#?}")] {
        for canary in CANARIES.iter().chain(also) {
            assert!(
                !text.contains(canary),
                "{what}: {{:?}} shows {canary:?}: {text}"
            );
        }
    }
}

fn credentials() -> Credentials {
    Credentials::new("AKcanary", SECRET_KEY, Some(SESSION_TOKEN.to_string()))
}

fn config(vars: &[(&str, &str)]) -> Config {
    Config::from_lookup(|name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    })
    .expect("a valid configuration")
}

#[test]
fn configuration_and_clients() {
    let by_keys = config(&[
        ("VOLCENGINE_ACCESS_KEY", "AKcanary"),
        ("VOLCENGINE_SECRET_KEY", SECRET_KEY),
        ("VOLCENGINE_SESSION_TOKEN", SESSION_TOKEN),
        ("SNAPWAKE_CURSOR_KEY", CURSOR_KEY),
    ]);
    assert_redacted("Config (static keys)", &by_keys, &[]);
    assert_redacted(
        "CredentialsSource::Static",
        &by_keys.agentkit.credentials,
        &[],
    );
    assert_redacted("AgentKitConfig", &by_keys.agentkit, &[]);
    let list = ListSettings {
        lock: by_keys.wake.lock.clone(),
        cursor_key: by_keys.cursor_key.clone(),
        open_url: None,
        prices: None,
    };
    assert_redacted("ListSettings", &list, &[]);

    let by_secret = config(&[
        ("AGENTKIT_CREDENTIALS_SECRET", "snapwake/agentkit"),
        ("AWS_SESSION_TOKEN", AWS_TOKEN),
    ]);
    assert_redacted("Config (secrets extension)", &by_secret, &[]);
    assert_redacted(
        "CredentialsSource::SecretsExtension",
        &by_secret.agentkit.credentials,
        &[],
    );

    assert_redacted("Credentials", &credentials(), &[]);
    let client = AgentKitClient::new(&by_keys.agentkit, credentials()).expect("client");
    assert_redacted("AgentKitClient", &client, &[]);
}

#[test]
fn signatures() {
    let body = br#"{"ToolId":"t-1"}"#;
    let signed = signer::sign(
        &credentials(),
        "cn-beijing",
        datetime!(2026-12-03 05:00:00 UTC),
        &signer::Request {
            host: "open.volcengineapi.com",
            query: &[("Action", "ListSessions"), ("Version", "2025-10-30")],
            content_type: "application/json",
            body,
        },
    );
    let parsed = parse_authorization(&signed.authorization).expect("a well-formed header");
    assert!(parsed.signature.len() == 64, "a hex HMAC-SHA256");
    let signature = parsed.signature.clone();
    assert_redacted("SignedHeaders", &signed, &[&signature]);
    assert_redacted("Authorization", &parsed, &[&signature]);
}

#[test]
fn wire_types_with_endpoints_and_env_values() {
    let endpoint = format!("https://s-1.sandbox.example/?auth={ENDPOINT_AUTH}");
    let session: Session = serde_json::from_value(serde_json::json!({
        "SessionId": "s-1", "Status": "Ready", "Endpoint": endpoint,
    }))
    .expect("a Session from the wire");
    assert_eq!(
        session.endpoint.as_ref().map(|e| e.expose()),
        Some(endpoint.as_str()),
        "the endpoint is read, only not shown"
    );
    assert_redacted("Session", &session, &[]);
    let page: ListSessionsResult = serde_json::from_value(serde_json::json!({
        "Sessions": [{"SessionId": "s-1", "Endpoint": endpoint}],
    }))
    .expect("a ListSessions page");
    assert_redacted("ListSessionsResult", &page, &[]);
    let created: CreateSessionResult = serde_json::from_value(serde_json::json!({
        "SessionId": "s-2", "Endpoint": endpoint,
    }))
    .expect("a CreateSession result");
    assert_redacted("CreateSessionResult", &created, &[]);
    // Snapshots carry no endpoint; their result type is checked as a neighbour would be.
    assert_redacted(
        "GetSessionSnapshotResult",
        &GetSessionSnapshotResult::default(),
        &[],
    );

    let env = EnvVar {
        key: "API_TOKEN".into(),
        value: ENV_SECRET.into(),
    };
    assert_redacted("EnvVar", &env, &[]);
    let tool = Tool {
        tool_id: Some("t-1".into()),
        envs: vec![env.clone()],
        ..Tool::default()
    };
    assert_redacted("Tool", &tool, &[]);
    let create = CreateTool {
        envs: Some(vec![env.clone()]),
        ..CreateTool::default()
    };
    assert_redacted("CreateTool", &create, &[]);
    let update = UpdateTool {
        envs: Some(vec![env]),
        ..UpdateTool::default()
    };
    assert_redacted("UpdateTool", &update, &[]);
}

#[test]
fn the_tool_catalogue() {
    let document = r#"{"entries": [
        {"key": "hermes_snapshot", "envs": {"MODE": "fast", "TOKEN": {"from_env": "HERMES_TOKEN"}}}
    ]}"#;
    let catalogue = Catalogue::load(None, Some(document), &|name| {
        (name == "HERMES_TOKEN").then(|| ENV_SECRET.to_string())
    })
    .expect("a catalogue");
    assert!(
        catalogue
            .entries
            .iter()
            .any(|e| e.envs.0.iter().any(|v| v.value == ENV_SECRET)),
        "the secret env value was read"
    );
    assert_redacted("Catalogue", &catalogue, &[]);
}
