//! Unknown routes answer 404, and known routes with a wrong method 405 with `Allow`.

use super::*;

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
