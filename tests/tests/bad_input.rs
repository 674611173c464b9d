//! The bad-input list of docs/architecture.md, "Quality bars and where they are checked" on every
//! route, against DynamoDB Local and the simulator: malformed JSON, wrong types, unknown kinds, ids
//! with `/`, `%2F`, `..`, control characters, 201-character ids, bodies over 16 KiB, forged
//! cursors, array-string group claims, bad headers, unknown routes and wrong methods. Each answers
//! a well-formed problem+json 4xx with the expected status and code, and a refused request changes
//! nothing.

use std::sync::Arc;
use std::time::Duration;

use data_encoding::{BASE64, BASE64URL_NOPAD};
use serde_json::Value;
use snapwake::agentkit::AgentKitClient;
use snapwake::store::dynamo::DynamoStore;
use snapwake_tests::*;

type DynamoApi = Api<Arc<DynamoStore>, AgentKitClient>;

/// One request and the problem it must answer.
struct Case {
    name: String,
    event: Value,
    want: u16,
    code: &'static str,
}

impl Case {
    fn new(name: impl Into<String>, event: Value, want: u16, code: &'static str) -> Case {
        Case {
            name: name.into(),
            event,
            want,
            code,
        }
    }
}

/// Run `cases` through the dispatcher; answer one line per failed case.
async fn failures(api: &DynamoApi, cases: Vec<Case>) -> Vec<String> {
    let mut failed = Vec::new();
    for case in cases {
        let id = request_id_of(&case.event);
        let resp = api.handle(from_event(&case.event)).await;
        let (_, body) = answer(&resp);
        if let Some(fault) = problem_fault(&resp, case.want, Some(&id)) {
            failed.push(format!("{}: {fault}", case.name));
        } else if body["code"] != case.code {
            failed.push(format!(
                "{}: code {}, want {} ({body})",
                case.name, body["code"], case.code
            ));
        }
    }
    failed
}

fn assert_none_failed(failed: Vec<String>, of: usize) {
    assert!(
        failed.is_empty(),
        "{} of {of} cases failed:\n  {}",
        failed.len(),
        failed.join("\n  ")
    );
}

async fn world_and_api(test: &str) -> (World, DynamoApi) {
    let world = World::start(Duration::ZERO).await;
    let store = Arc::new(dynamo_store(test).await);
    world.register(&store).await;
    let api = Api::new(store, world.client(), identity());
    (world, api)
}

const ALICE: Who<'static> = Who::User("alice");

/// Ids (as raw path segments) that must be refused, and how.
fn bad_ids() -> Vec<(String, u16, &'static str)> {
    vec![
        ("a%2Fb".into(), 400, "INVALID_REQUEST"),
        ("a%2fb".into(), 400, "INVALID_REQUEST"),
        ("%2E%2E%2F%2E%2E".into(), 400, "INVALID_REQUEST"),
        ("..%2F..%2Fetc".into(), 400, "INVALID_REQUEST"),
        ("%2F".into(), 400, "INVALID_REQUEST"),
        ("%00".into(), 400, "INVALID_REQUEST"),
        ("a%00b".into(), 400, "INVALID_REQUEST"),
        ("a%0Ab".into(), 400, "INVALID_REQUEST"),
        ("%0D%0A".into(), 400, "INVALID_REQUEST"),
        ("a%7F".into(), 400, "INVALID_REQUEST"),
        ("a%20b".into(), 400, "INVALID_REQUEST"),
        ("%FF".into(), 400, "INVALID_REQUEST"),
        ("%C3%A9".into(), 400, "INVALID_REQUEST"),
        ("a%".into(), 400, "INVALID_REQUEST"),
        ("a%252F".into(), 400, "INVALID_REQUEST"),
        ("a".repeat(201), 400, "INVALID_REQUEST"),
        ("%61".repeat(201), 400, "INVALID_REQUEST"),
        // Dots are legal id characters: `..` is just an id nobody has.
        ("..".into(), 404, "AGENT_NOT_FOUND"),
        ("%2E%2E".into(), 404, "AGENT_NOT_FOUND"),
        // The boundary: 200 characters is a valid id (of nobody).
        ("a".repeat(200), 404, "AGENT_NOT_FOUND"),
    ]
}

/// The routes with an `{agent_id}`, over `{id}` (and a valid `{snapshot}`), each with a body
/// it accepts.
const AGENT_ROUTES: [(&str, &str, Option<&str>); 6] = [
    ("GET", "/v1/agents/codex/{id}", None),
    ("POST", "/v1/agents/codex/{id}/resume", None),
    ("POST", "/v1/agents/codex/{id}/sleep", None),
    (
        "POST",
        "/v1/agents/codex/{id}/keepalive",
        Some(r#"{"ttl_s":600}"#),
    ),
    ("DELETE", "/v1/agents/codex/{id}/snapshots/{snapshot}", None),
    ("DELETE", "/v1/agents/codex/{id}", None),
];

#[tokio::test]
async fn bad_kinds_and_ids_are_refused_on_every_agent_route() {
    let (world, api) = world_and_api("bad-input-ids").await;
    let (agent, snapshot) = world.asleep_agent("alice", "Target");
    let mut cases = Vec::new();
    for (method, template, body) in AGENT_ROUTES {
        let path = |id: &str| {
            template
                .replace("{id}", id)
                .replace("{snapshot}", &snapshot)
        };
        for (id, want, code) in bad_ids() {
            let p = path(&id);
            cases.push(Case::new(
                format!("{method} {p}"),
                event(method, &p, ALICE, body),
                want,
                code,
            ));
        }
        // Unknown or miscased kinds, on the owner's real agent.
        for kind in [
            "gpt", "Codex", "CODEX", "codex%00", "%2Fcodex", "codex%2F", "..", "",
        ] {
            let p = path(&agent).replace("/codex/", &format!("/{kind}/"));
            cases.push(Case::new(
                format!("{method} {p}"),
                event(method, &p, ALICE, body),
                400,
                "INVALID_REQUEST",
            ));
        }
        // A literal `/` in an id makes another path: no route has it.
        let p = path("a/b");
        cases.push(Case::new(
            format!("{method} {p}"),
            event(method, &p, ALICE, body),
            404,
            "ROUTE_NOT_FOUND",
        ));
    }
    // Bad snapshot ids, on the owner's real agent.
    for (id, want, code) in bad_ids() {
        let p = format!("/v1/agents/codex/{agent}/snapshots/{id}");
        // A valid id the agent does not have.
        let code = if want == 404 {
            "SNAPSHOT_NOT_FOUND"
        } else {
            code
        };
        cases.push(Case::new(
            format!("DELETE {p}"),
            event("DELETE", &p, ALICE, None),
            want,
            code,
        ));
    }
    // Bad snapshot ids in the resume body (decoded JSON: no percent-decoding there).
    let resume = format!("/v1/agents/codex/{agent}/resume");
    for id in [
        "a/b".to_string(),
        "../..".into(),
        "a\u{0}b".into(),
        "a\nb".into(),
        "a\u{7f}".into(),
        "é".into(),
        "a%2Fb".into(),
        "".into(),
        "a".repeat(201),
    ] {
        let body = serde_json::json!({ "snapshot_id": id }).to_string();
        cases.push(Case::new(
            format!("POST {resume} {body:.60}"),
            event("POST", &resume, ALICE, Some(&body)),
            400,
            "INVALID_REQUEST",
        ));
    }
    let n = cases.len();
    assert_none_failed(failures(&api, cases).await, n);
    assert!(
        world.sim.control().snapshot(&snapshot).is_some(),
        "nothing refused may delete the snapshot"
    );
    assert!(
        world
            .sim
            .control()
            .sessions()
            .iter()
            .all(|s| s.user_session_id.as_deref() != Some(agent.as_str())),
        "nothing refused may wake the agent"
    );
    assert_eq!(
        world.sim.control().counters().received("SetSessionTtl"),
        0,
        "nothing refused may keep a session alive"
    );
}

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

#[tokio::test]
async fn bad_headers_are_refused() {
    let (world, api) = world_and_api("bad-input-headers").await;
    let (agent, snapshot) = world.asleep_agent("alice", "Target");
    let with = |mut ev: Value, name: &str, value: &str| {
        ev["headers"][name] = value.into();
        ev
    };
    let create = || {
        event(
            "POST",
            "/v1/agents",
            ALICE,
            Some(r#"{"kind":"codex","display_name":"x"}"#),
        )
    };
    let mut cases = Vec::new();
    for key in [
        "a/b".to_string(),
        "a b".into(),
        "é".into(),
        "k".repeat(201),
        "".into(),
    ] {
        cases.push(Case::new(
            format!("POST /v1/agents, Idempotency-Key {key:.20?}"),
            with(create(), "idempotency-key", &key),
            400,
            "INVALID_REQUEST",
        ));
    }
    let delete_agent = format!("/v1/agents/codex/{agent}");
    let delete_snapshot = format!("{delete_agent}/snapshots/{snapshot}");
    for path in [&delete_agent, &delete_snapshot] {
        for tag in [
            "7",
            "\"x\"",
            "\"1\", \"2\"",
            "\"-1\"",
            "\"99\"",
            "W/\"abc\"",
        ] {
            cases.push(Case::new(
                format!("DELETE {path}, If-Match {tag}"),
                with(event("DELETE", path, ALICE, None), "if-match", tag),
                412,
                "PRECONDITION_FAILED",
            ));
        }
    }
    let n = cases.len();
    assert_none_failed(failures(&api, cases).await, n);

    // An If-Match whose bytes are not text is a precondition that cannot hold, not an absent
    // one. (Built on the request: JSON events carry text only.)
    for path in [&delete_snapshot, &delete_agent] {
        let mut req = from_event(&event("DELETE", path, ALICE, None));
        req.headers_mut().insert(
            "if-match",
            http::HeaderValue::from_bytes(b"\"1\xff\"").unwrap(),
        );
        let resp = api.handle(req).await;
        assert!(
            problem_fault(&resp, 412, None).is_none(),
            "DELETE {path} with a binary If-Match: {:?}",
            answer(&resp)
        );
    }
    let mut req = from_event(&create());
    req.headers_mut().insert(
        "idempotency-key",
        http::HeaderValue::from_bytes(b"key-\xff").unwrap(),
    );
    let resp = api.handle(req).await;
    assert!(
        problem_fault(&resp, 400, None).is_none(),
        "a binary Idempotency-Key: {:?}",
        answer(&resp)
    );
    assert!(world.sim.control().snapshot(&snapshot).is_some());
    assert!(world.sim.control().sessions().is_empty());
}

#[tokio::test]
async fn bad_queries_and_forged_cursors_are_refused() {
    let (world, api) = world_and_api("bad-input-queries").await;
    for i in 0..3 {
        world.asleep_agent(&format!("owner{i}"), "Paged");
    }
    // Admin pages come from the index: sync it, as the sweep does.
    let synced = snapwake::index_sync::sync_index(
        &api.list.store,
        &world.client(),
        &world.registry(),
        snapwake::deadline::Deadline::after(std::time::Duration::from_secs(30)),
    )
    .await;
    assert!(synced.completed);
    let list = |query: &str, who: Who<'_>| {
        let mut ev = event("GET", "/v1/agents", who, None);
        ev["rawQueryString"] = query.into();
        ev
    };
    let admin = Who::Admin("root");

    // A real cursor, to tamper with.
    let resp = api
        .handle(from_event(&list("owner=*&limit=1", admin)))
        .await;
    let (status, page) = answer(&resp);
    assert_eq!(status, 200, "{page}");
    let cursor = page["next_cursor"]
        .as_str()
        .unwrap_or_else(|| panic!("three agents in pages of one: {page}"))
        .to_string();
    let (payload, tag) = cursor.split_once('.').expect("payload.tag");
    let mut json = BASE64URL_NOPAD.decode(payload.as_bytes()).unwrap();
    // Change one byte of the payload, keep the tag.
    let at = json.iter().position(u8::is_ascii_digit).unwrap_or(0);
    json[at] = if json[at] == b'9' { b'1' } else { json[at] + 1 };
    let changed = format!("{}.{tag}", BASE64URL_NOPAD.encode(&json));
    let mut flipped_tag = tag.to_string().into_bytes();
    flipped_tag[0] = if flipped_tag[0] == b'A' { b'B' } else { b'A' };
    let flipped = format!("{payload}.{}", String::from_utf8(flipped_tag).unwrap());

    let query_cases: Vec<(String, Who<'_>, u16, &str)> = vec![
        ("kind=gpt".into(), ALICE, 400, "INVALID_REQUEST"),
        ("kind=Codex".into(), ALICE, 400, "INVALID_REQUEST"),
        ("kind=codex%00".into(), ALICE, 400, "INVALID_REQUEST"),
        // `sleeping` is a state now (a sleep in flight); these are not.
        ("state=dozing".into(), ALICE, 400, "INVALID_REQUEST"),
        ("state=Sleeping".into(), ALICE, 400, "INVALID_REQUEST"),
        ("state=gone".into(), ALICE, 400, "INVALID_REQUEST"),
        ("limit=0".into(), admin, 400, "INVALID_REQUEST"),
        ("limit=101".into(), admin, 400, "INVALID_REQUEST"),
        ("limit=-1".into(), admin, 400, "INVALID_REQUEST"),
        ("limit=ten".into(), admin, 400, "INVALID_REQUEST"),
        (
            "limit=99999999999999999999".into(),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        ("owner=*&limit=1.5".into(), admin, 400, "INVALID_REQUEST"),
        ("cursor=abc".into(), ALICE, 400, "INVALID_REQUEST"),
        (
            format!("owner=alice&cursor={cursor}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            "owner=*&cursor=forged".into(),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        ("owner=*&cursor=.".into(), admin, 400, "INVALID_REQUEST"),
        (
            "owner=*&cursor=%00%0A".into(),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={changed}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={flipped}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={payload}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={cursor}{cursor}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        (
            format!("owner=*&cursor={}", "A".repeat(5000)),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        // A cursor of another listing (the kind filter differs).
        (
            format!("owner=*&kind=codex&limit=1&cursor={cursor}"),
            admin,
            400,
            "INVALID_REQUEST",
        ),
        // owner=* from someone who is not an admin: that listing does not exist for them.
        (
            format!("owner=*&cursor={cursor}"),
            ALICE,
            404,
            "AGENT_NOT_FOUND",
        ),
    ];
    let cases: Vec<Case> = query_cases
        .into_iter()
        .map(|(q, who, want, code)| {
            Case::new(format!("GET /v1/agents?{q:.80}"), list(&q, who), want, code)
        })
        .collect();
    let n = cases.len();
    assert_none_failed(failures(&api, cases).await, n);

    // `sleeping` is a valid filter now.
    let resp = api.handle(from_event(&list("state=sleeping", ALICE))).await;
    assert_eq!(resp.status().as_u16(), 200, "{:?}", answer(&resp).1);

    // The untouched cursor still pages: the refusals above are about the forgery, not the key.
    let resp = api
        .handle(from_event(&list(
            &format!("owner=*&limit=1&cursor={cursor}"),
            admin,
        )))
        .await;
    assert_eq!(resp.status().as_u16(), 200, "{:?}", answer(&resp).1);
}

/// API Gateway flattens an array claim into a string such as `[admins devs]`: each form is
/// parsed, and only a group named exactly `admins` makes an admin.
#[tokio::test]
async fn array_string_group_claims_make_admins_only_when_they_name_the_group() {
    let (world, api) = world_and_api("bad-input-groups").await;
    let (agent, _) = world.asleep_agent("alice", "Target");
    let as_member = |claim: &str, groups: &str, path: &str, query: &str| {
        let mut ev = event("GET", path, Who::User("mallory"), None);
        ev["requestContext"]["authorizer"]["jwt"]["claims"][claim] = groups.into();
        ev["rawQueryString"] = query.into();
        ev
    };
    let agent_path = format!("/v1/agents/codex/{agent}");
    let admin_forms = [
        ("cognito:groups", "[admins devs]"),
        ("cognito:groups", "[devs admins]"),
        ("cognito:groups", "[admins]"),
        ("cognito:groups", r#"["devs","admins"]"#),
        ("groups", "[admins, devs]"),
        ("cognito:groups", "admins"),
    ];
    let not_admin_forms = [
        ("cognito:groups", "[admins-devs]"),
        ("cognito:groups", "[Admins devs]"),
        ("cognito:groups", "[admin devs]"),
        ("cognito:groups", "admins devs"),
        ("cognito:groups", "[]"),
        ("cognito:groups", "[[admins]]"),
        ("cognito:groups", r#"["admins devs"]"#),
        ("cognito:groups", r#"[{"name":"admins"}]"#),
        ("custom:groups", "[admins]"),
        ("role", "admins"),
    ];
    let mut cases = Vec::new();
    let mut failed = Vec::new();
    for (claim, groups) in not_admin_forms {
        for (path, query) in [(agent_path.as_str(), ""), ("/v1/agents", "owner=*")] {
            cases.push(Case::new(
                format!("{claim}={groups}: GET {path}?{query}"),
                as_member(claim, groups, path, query),
                404,
                "AGENT_NOT_FOUND",
            ));
        }
    }
    for (claim, groups) in admin_forms {
        for (path, query) in [(agent_path.as_str(), ""), ("/v1/agents", "owner=*")] {
            let resp = api
                .handle(from_event(&as_member(claim, groups, path, query)))
                .await;
            let (status, body) = answer(&resp);
            if status != 200 {
                failed.push(format!(
                    "{claim}={groups}: GET {path}?{query}: got {status}, want 200 ({body})"
                ));
            }
        }
    }
    let n = cases.len() + admin_forms.len() * 2;
    failed.extend(failures(&api, cases).await);
    assert_none_failed(failed, n);
}

#[tokio::test]
async fn unknown_routes_are_404_and_wrong_methods_405_with_allow() {
    let (_world, api) = world_and_api("bad-input-routes").await;
    let mut failed = Vec::new();
    let unknown = [
        ("GET", "/"),
        ("GET", "/v1"),
        ("GET", "/v1/agent"),
        ("GET", "/v2/agents"),
        ("GET", "/V1/agents"),
        ("GET", "/v1/capabilities/x"),
        ("GET", "/v1/agents/codex"),
        ("GET", "/v1/agents/codex/x/y"),
        ("POST", "/v1/agents/codex/x/resume/now"),
        ("POST", "/v1/agents/codex/x/wake"),
        ("POST", "/v1/agents/codex/x/sleep/now"),
        ("POST", "/v1/agents/codex/x/keepalive/600"),
        ("POST", "/v1/agents/codex/x/keep-alive"),
        ("DELETE", "/v1/agents/codex/x/snapshots"),
        ("DELETE", "/v1/agents/codex/x/snapshots/s/extra"),
        ("GET", "/v1/%61gents"),
    ];
    let wrong_method = [
        ("DELETE", "/v1/capabilities", "GET"),
        ("POST", "/v1/capabilities", "GET"),
        ("PUT", "/v1/agents", "GET, POST"),
        ("DELETE", "/v1/agents", "GET, POST"),
        ("PATCH", "/v1/agents/codex/x", "GET, DELETE"),
        ("POST", "/v1/agents/codex/x", "GET, DELETE"),
        ("GET", "/v1/agents/codex/x/resume", "POST"),
        ("DELETE", "/v1/agents/codex/x/resume", "POST"),
        ("GET", "/v1/agents/codex/x/sleep", "POST"),
        ("DELETE", "/v1/agents/codex/x/sleep", "POST"),
        ("GET", "/v1/agents/codex/x/keepalive", "POST"),
        ("PUT", "/v1/agents/codex/x/keepalive", "POST"),
        ("GET", "/v1/agents/codex/x/snapshots/s", "DELETE"),
        ("OPTIONS", "/v1/agents/codex/x/snapshots/s", "DELETE"),
    ];
    for who in [ALICE, Who::Nobody] {
        let mut cases = Vec::new();
        for (method, path) in unknown {
            cases.push(Case::new(
                format!("{method} {path} by {who:?}"),
                event(method, path, who, None),
                404,
                "ROUTE_NOT_FOUND",
            ));
        }
        for (method, path, _) in wrong_method {
            cases.push(Case::new(
                format!("{method} {path} by {who:?}"),
                event(method, path, who, None),
                405,
                "METHOD_NOT_ALLOWED",
            ));
        }
        failed.extend(failures(&api, cases).await);
        for (method, path, allow) in wrong_method {
            let resp = api
                .handle(from_event(&event(method, path, who, None)))
                .await;
            if header_of(&resp, "allow") != Some(allow) {
                failed.push(format!(
                    "{method} {path}: Allow {:?}, want {allow:?}",
                    header_of(&resp, "allow")
                ));
            }
        }
    }
    // Each function alone: a path it does not serve is a 404 problem, a method it does not
    // serve on its path a 405 naming its own methods.
    for function in Function::ALL {
        let resp = api
            .handle_by(function, from_event(&event("GET", "/v1/nope", ALICE, None)))
            .await;
        if let Some(fault) = problem_fault(&resp, 404, None) {
            failed.push(format!("{function:?} GET /v1/nope: {fault}"));
        }
        let route = function.routes()[0];
        let path = route.pattern.replace(['{', '}'], "");
        let resp = api
            .handle_by(function, from_event(&event("PUT", &path, ALICE, None)))
            .await;
        let allow: Vec<&str> = function
            .routes()
            .iter()
            .filter(|r| r.pattern == route.pattern)
            .map(|r| r.method)
            .collect();
        if let Some(fault) = problem_fault(&resp, 405, None) {
            failed.push(format!("{function:?} PUT {path}: {fault}"));
        } else if header_of(&resp, "allow") != Some(allow.join(", ").as_str()) {
            failed.push(format!(
                "{function:?} PUT {path}: Allow {:?}",
                header_of(&resp, "allow")
            ));
        }
    }
    assert!(failed.is_empty(), "\n  {}", failed.join("\n  "));
}
