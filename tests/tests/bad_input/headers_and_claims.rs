//! Bad headers, and group claims flattened by API Gateway into array strings (an admin only
//! when they name the group exactly).

use super::*;

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
