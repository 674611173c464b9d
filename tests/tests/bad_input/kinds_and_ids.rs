//! Unknown kinds and bad ids (`/`, `%2F`, `..`, control characters, 201 characters) on every
//! agent route.

use super::*;

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
        world.received("SetSessionTtl"),
        0,
        "nothing refused may keep a session alive"
    );
}
