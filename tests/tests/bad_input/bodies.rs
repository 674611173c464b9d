//! Bad bodies on the routes that read one: absent, blank, malformed JSON, wrong types, bytes that
//! are not UTF-8, fields a route does not take, and bodies over 16 KiB.

use super::*;

/// A JSON body of about `bytes` bytes that would otherwise be valid for create.
fn oversized_create(bytes: usize) -> String {
    serde_json::json!({"kind": "codex", "display_name": "Big", "retention": "temporary",
        "pad": "x".repeat(bytes)})
    .to_string()
}

#[tokio::test]
async fn bad_bodies_are_refused() {
    let (world, api) = world_and_api("bad-input-bodies").await;
    let (agent, snapshot) = world.asleep_agent("alice", "Target");
    let resume = format!("/v1/agents/codex/{agent}/resume");
    let mut cases = Vec::new();

    let create_bodies: Vec<(&str, String, u16, &str)> = vec![
        ("absent", String::new(), 400, "INVALID_REQUEST"),
        ("blank", "  \n ".into(), 400, "INVALID_REQUEST"),
        (
            "malformed",
            r#"{"kind":"codex","#.into(),
            400,
            "INVALID_REQUEST",
        ),
        ("not JSON", "kind=codex".into(), 400, "INVALID_REQUEST"),
        ("null", "null".into(), 400, "INVALID_REQUEST"),
        ("an array", "[]".into(), 400, "INVALID_REQUEST"),
        ("a string", r#""codex""#.into(), 400, "INVALID_REQUEST"),
        (
            "no kind",
            r#"{"display_name":"x"}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "no name",
            r#"{"kind":"codex"}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "kind a number",
            r#"{"kind":1,"display_name":"x"}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "name an array",
            r#"{"kind":"codex","display_name":["x"]}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "retention a bool",
            r#"{"kind":"codex","display_name":"x","retention":true}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "unknown kind",
            r#"{"kind":"gpt","display_name":"x"}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "miscased kind",
            r#"{"kind":"Codex","display_name":"x"}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "unknown retention",
            r#"{"kind":"codex","display_name":"x","retention":"forever"}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "unknown field",
            r#"{"kind":"codex","display_name":"x","retension":"temporary"}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "duplicate field",
            r#"{"kind":"codex","kind":"hermes","display_name":"x"}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "trailing garbage",
            r#"{"kind":"codex","display_name":"x"} {}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "deeply nested",
            format!(
                r#"{{"kind":"codex","display_name":{}1{}}}"#,
                "[".repeat(2000),
                "]".repeat(2000)
            ),
            400,
            "INVALID_REQUEST",
        ),
        (
            "name with NUL",
            r#"{"kind":"codex","display_name":"a\u0000b"}"#.into(),
            422,
            "INVALID_REQUEST",
        ),
        (
            "name with newline",
            r#"{"kind":"codex","display_name":"a\nb"}"#.into(),
            422,
            "INVALID_REQUEST",
        ),
        (
            "blank name",
            r#"{"kind":"codex","display_name":"   "}"#.into(),
            422,
            "INVALID_REQUEST",
        ),
        (
            "41-character name",
            format!(r#"{{"kind":"codex","display_name":"{}"}}"#, "n".repeat(41)),
            422,
            "INVALID_REQUEST",
        ),
        (
            "over 16 KiB",
            oversized_create(16 * 1024),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
        (
            "1 MiB",
            oversized_create(1024 * 1024),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
    ];
    for (name, body, want, code) in create_bodies {
        let body = (!body.is_empty()).then_some(body);
        cases.push(Case::new(
            format!("POST /v1/agents, body {name}"),
            event("POST", "/v1/agents", ALICE, body.as_deref()),
            want,
            code,
        ));
    }
    // Bytes that are not UTF-8 (a base64-encoded body).
    let mut binary = event("POST", "/v1/agents", ALICE, None);
    binary["body"] = BASE64.encode(&[0xff, 0xfe, b'{', 0x00, 0x80]).into();
    binary["isBase64Encoded"] = true.into();
    cases.push(Case::new(
        "POST /v1/agents, body not UTF-8",
        binary,
        400,
        "INVALID_REQUEST",
    ));

    let resume_bodies: Vec<(&str, String, u16, &str)> = vec![
        ("malformed", "{".into(), 400, "INVALID_REQUEST"),
        ("not JSON", "snapshot_id=x".into(), 400, "INVALID_REQUEST"),
        ("an array", "[]".into(), 400, "INVALID_REQUEST"),
        ("a number", "7".into(), 400, "INVALID_REQUEST"),
        (
            "snapshot id a number",
            r#"{"snapshot_id":5}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "snapshot id an object",
            r#"{"snapshot_id":{"id":"x"}}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "misspelt field",
            format!(r#"{{"snapshotid":"{snapshot}"}}"#),
            400,
            "INVALID_REQUEST",
        ),
        (
            "over 16 KiB",
            format!(
                r#"{{"snapshot_id":"{snapshot}","pad":"{}"}}"#,
                "x".repeat(16 * 1024)
            ),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
        (
            "a snapshot it does not have",
            r#"{"snapshot_id":"snap-not-there"}"#.into(),
            422,
            "NOT_WAKEABLE",
        ),
    ];
    for (name, body, want, code) in resume_bodies {
        cases.push(Case::new(
            format!("POST {resume}, body {name}"),
            event("POST", &resume, ALICE, Some(&body)),
            want,
            code,
        ));
    }

    // Sleep takes no fields: anything sent is refused, not ignored.
    let sleep = format!("/v1/agents/codex/{agent}/sleep");
    let sleep_bodies: Vec<(&str, String, u16, &str)> = vec![
        ("malformed", "{".into(), 400, "INVALID_REQUEST"),
        ("not JSON", "now=1".into(), 400, "INVALID_REQUEST"),
        ("an array", "[]".into(), 400, "INVALID_REQUEST"),
        ("a number", "7".into(), 400, "INVALID_REQUEST"),
        ("null", "null".into(), 400, "INVALID_REQUEST"),
        (
            "a field",
            r#"{"force":true}"#.into(),
            400,
            "INVALID_REQUEST",
        ),
        (
            "a snapshot id",
            format!(r#"{{"snapshot_id":"{snapshot}"}}"#),
            400,
            "INVALID_REQUEST",
        ),
        ("trailing garbage", "{} {}".into(), 400, "INVALID_REQUEST"),
        (
            "over 16 KiB",
            format!(r#"{{"pad":"{}"}}"#, "x".repeat(16 * 1024)),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
    ];
    for (name, body, want, code) in sleep_bodies {
        cases.push(Case::new(
            format!("POST {sleep}, body {name}"),
            event("POST", &sleep, ALICE, Some(&body)),
            want,
            code,
        ));
    }

    // Keepalive needs exactly `{"ttl_s": <whole number>}`, 60 to 28800.
    let keepalive = format!("/v1/agents/codex/{agent}/keepalive");
    let keepalive_bodies: Vec<(&str, Option<String>, u16, &str)> = vec![
        ("absent", None, 400, "INVALID_REQUEST"),
        ("blank", Some(" \n ".into()), 400, "INVALID_REQUEST"),
        ("empty object", Some("{}".into()), 400, "INVALID_REQUEST"),
        (
            "malformed",
            Some(r#"{"ttl_s":"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        ("not JSON", Some("ttl_s=600".into()), 400, "INVALID_REQUEST"),
        ("null", Some("null".into()), 400, "INVALID_REQUEST"),
        ("a number", Some("600".into()), 400, "INVALID_REQUEST"),
        (
            "an array",
            Some(r#"[{"ttl_s":600}]"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "ttl a string",
            Some(r#"{"ttl_s":"600"}"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "ttl negative",
            Some(r#"{"ttl_s":-600}"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "ttl fractional",
            Some(r#"{"ttl_s":600.5}"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "ttl null",
            Some(r#"{"ttl_s":null}"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "ttl past u64",
            Some(r#"{"ttl_s":18446744073709551616}"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "unknown field",
            Some(r#"{"ttl_s":600,"ttl_unit":"hour"}"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "misspelt field",
            Some(r#"{"ttl":600}"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "duplicate field",
            Some(r#"{"ttl_s":600,"ttl_s":60}"#.into()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "over 16 KiB",
            Some(format!(
                r#"{{"ttl_s":600,"pad":"{}"}}"#,
                "x".repeat(16 * 1024)
            )),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
        (
            "ttl 0",
            Some(r#"{"ttl_s":0}"#.into()),
            422,
            "INVALID_REQUEST",
        ),
        (
            "ttl 59",
            Some(r#"{"ttl_s":59}"#.into()),
            422,
            "INVALID_REQUEST",
        ),
        (
            "ttl 28801",
            Some(r#"{"ttl_s":28801}"#.into()),
            422,
            "INVALID_REQUEST",
        ),
        (
            "ttl u64::MAX",
            Some(r#"{"ttl_s":18446744073709551615}"#.into()),
            422,
            "INVALID_REQUEST",
        ),
        // A good body, on an agent with no session to keep alive.
        (
            "good, agent asleep",
            Some(r#"{"ttl_s":600}"#.into()),
            422,
            "NOT_AWAKE",
        ),
    ];
    for (name, body, want, code) in keepalive_bodies {
        cases.push(Case::new(
            format!("POST {keepalive}, body {name}"),
            event("POST", &keepalive, ALICE, body.as_deref()),
            want,
            code,
        ));
    }
    let mut binary = event("POST", &keepalive, ALICE, None);
    binary["body"] = BASE64.encode(&[0xff, 0xfe, b'{', 0x00, 0x80]).into();
    binary["isBase64Encoded"] = true.into();
    cases.push(Case::new(
        format!("POST {keepalive}, body not UTF-8"),
        binary,
        400,
        "INVALID_REQUEST",
    ));
    let n = cases.len();
    assert_none_failed(failures(&api, cases).await, n);
    let ctl = world.sim.control();
    assert!(
        ctl.sessions().is_empty(),
        "no refused create or resume may start a session: {:?}",
        ctl.sessions()
            .iter()
            .map(|s| &s.user_session_id)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        ctl.counters().received("SetSessionTtl"),
        0,
        "no refused keepalive reaches AgentKit"
    );
    assert_eq!(
        ctl.counters().received("CreateSessionSnapshot"),
        0,
        "no refused sleep reaches AgentKit"
    );
    assert!(ctl.snapshot(&snapshot).is_some());
}
