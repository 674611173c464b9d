//! The authorisation matrix of docs/architecture.md, "Quality bars and where they are checked":
//! every HTTP route × {the owner, another user, an admin, no identity}, each cell the status it
//! must answer, against DynamoDB Local and the AgentKit simulator, all four functions over one
//! store and one client.
//!
//! Another owner's agent answers 404 with exactly the body a missing agent gets (never 403,
//! nothing that tells "exists" from "not yours"); no identity answers 401; a refused call
//! changes nothing. Calls that change an agent (resume, sleep, keepalive, deletes) get a fresh
//! agent per cell.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::AgentKitClient;
use snapwake::identity::caller;
use snapwake::identity::IdentityConfig;
use snapwake::store::dynamo::DynamoStore;
use snapwake_sim::SeedSnapshot;
use snapwake_tests::*;

type DynamoApi = Api<Arc<DynamoStore>, AgentKitClient>;

mod matrix;
use matrix::*;

/// An agent a cell acts on: its id and one of its snapshots, or its live session and when
/// that expires.
#[derive(Clone, Debug, Default)]
struct Agent {
    id: String,
    snapshot: String,
    session: String,
    expire_at: Option<String>,
}

/// An ownerless snapshot (no UserSessionId): the agent `snapshot-<SnapshotId>`.
fn legacy_agent(world: &World) -> Agent {
    let snapshot = world
        .sim
        .control()
        .seed_snapshot(SeedSnapshot {
            tool_id: world.recoverable.clone(),
            session_id: Some(format!("s-legacy-{}", uuid::Uuid::new_v4().simple())),
            ..SeedSnapshot::default()
        })
        .unwrap();
    Agent {
        id: format!("snapshot-{snapshot}"),
        snapshot,
        ..Agent::default()
    }
}

fn asleep_agent(world: &World) -> Agent {
    let (id, snapshot) = world.asleep_agent("alice", "Asleep");
    Agent {
        id,
        snapshot,
        ..Agent::default()
    }
}

/// Alice's agent with a live session on the recoverable Tool, and no record.
fn awake_agent(world: &World) -> Agent {
    let id = caller::mint("alice");
    let session = world.live_session("alice", &id);
    let expire_at = world.sim.control().session(&session).unwrap().expire_at;
    Agent {
        id,
        session,
        expire_at,
        ..Agent::default()
    }
}

/// A call of `method` on `path?query` by `who`: the response and the request id it carried.
async fn call(
    api: &DynamoApi,
    method: &str,
    path: &str,
    query: &str,
    who: Who<'_>,
    body: Option<&str>,
) -> (lambda_http::Response<lambda_http::Body>, String) {
    let mut ev = event(method, path, who, body);
    ev["rawQueryString"] = query.into();
    let id = request_id_of(&ev);
    (api.handle(from_event(&ev)).await, id)
}

/// The problem body without its request id (the part two answers may share).
fn without_request_id(mut body: Value) -> Value {
    if let Some(o) = body.as_object_mut() {
        o.remove("request_id");
    }
    body
}

/// Whether the answer lists `agent_id`.
fn lists(body: &Value, agent_id: &str) -> bool {
    body["agents"]
        .as_array()
        .is_some_and(|a| a.iter().any(|v| v["agent_id"] == agent_id))
}

/// Whether AgentKit still holds `agent` as it was seeded: its snapshot, and no session; or
/// for an awake agent, its session expiring when it did, and no snapshot.
fn untouched(world: &World, agent: &Agent) -> bool {
    let ctl = world.sim.control();
    if !agent.session.is_empty() {
        return ctl
            .session(&agent.session)
            .is_some_and(|s| s.is_active() && s.expire_at == agent.expire_at)
            && world.snapshots_of(&agent.id).is_empty();
    }
    let sessions = ctl
        .sessions()
        .into_iter()
        .filter(|s| s.user_session_id.as_deref() == Some(agent.id.as_str()))
        .count();
    ctl.snapshot(&agent.snapshot).is_some() && (agent.id.starts_with("snapshot-") || sessions == 0)
}

async fn dynamo_api(test: &str, identity: IdentityConfig) -> (World, DynamoApi) {
    let world = World::start(Duration::ZERO).await;
    let store = Arc::new(dynamo_store(test).await);
    world.register(&store).await;
    let api = Api::new(store, world.client(), identity);
    (world, api)
}

#[tokio::test]
async fn every_route_answers_each_caller_as_the_matrix_says() {
    let (world, api) = dynamo_api("authorization-matrix", identity()).await;

    // The shared agents.
    let (status, created) = answer(
        &call(
            &api,
            "POST",
            "/v1/agents",
            "",
            Who::User("alice"),
            Some(CREATE_BODY),
        )
        .await
        .0,
    );
    assert_eq!(status, 201, "{created}");
    let created = Agent {
        id: created["agent_id"].as_str().unwrap().to_string(),
        ..Agent::default()
    };
    let asleep = asleep_agent(&world);
    let legacy = legacy_agent(&world);
    // What a missing agent answers: a foreign one must answer exactly that.
    let missing = format!("/v1/agents/codex/{}", caller::mint("alice"));
    let (resp, _) = call(&api, "GET", &missing, "", Who::User("alice"), None).await;
    let (status, not_found) = answer(&resp);
    assert_eq!(status, 404, "{not_found}");
    assert_eq!(not_found["code"], "AGENT_NOT_FOUND");
    let not_found = without_request_id(not_found);

    let mut failures = Vec::new();
    let mut cells = 0;
    for row in rows() {
        for (column, (caller, who)) in CALLERS.iter().enumerate() {
            cells += 1;
            let agent = match row.subject {
                Subject::None => Agent::default(),
                Subject::Created => created.clone(),
                Subject::Asleep => asleep.clone(),
                Subject::Legacy => legacy.clone(),
                Subject::FreshAsleep => asleep_agent(&world),
                Subject::FreshLegacy => legacy_agent(&world),
                Subject::FreshAwake => awake_agent(&world),
            };
            let fill = |t: &str| {
                t.replace("{agent}", &agent.id)
                    .replace("{snapshot}", &agent.snapshot)
            };
            let path = fill(row.path);
            let body = row.body.map(fill);
            let (resp, request_id) =
                call(&api, row.method, &path, row.query, *who, body.as_deref()).await;
            let (got, answer_body) = answer(&resp);
            let want = row.want[column];
            let cell = format!(
                "{} {}{}{} by {caller}",
                row.method,
                row.path,
                if row.query.is_empty() { "" } else { "?" },
                row.query
            );
            if got != want {
                failures.push(format!(
                    "{cell}: got {got}, want {want} (body {answer_body})"
                ));
                continue;
            }
            if want >= 400 {
                if let Some(fault) = problem_fault(&resp, want, Some(&request_id)) {
                    failures.push(format!("{cell}: not a proper problem: {fault}"));
                }
                let code = answer_body["code"].as_str().unwrap_or("");
                match want {
                    401 if code != "UNAUTHENTICATED" => {
                        failures.push(format!("{cell}: 401 with code {code}"))
                    }
                    404 if without_request_id(answer_body.clone()) != not_found => failures.push(
                        format!("{cell}: its 404 differs from a missing agent's: {answer_body}"),
                    ),
                    _ => {}
                }
                if matches!(
                    row.subject,
                    Subject::FreshAsleep | Subject::FreshLegacy | Subject::FreshAwake
                ) && !untouched(&world, &agent)
                {
                    failures.push(format!("{cell}: refused ({got}) but changed the agent"));
                }
            }
            if let Some(expected) = row.lists_created {
                let listed = lists(&answer_body, &created.id);
                if listed != expected[column] {
                    failures.push(format!(
                        "{cell}: lists the owner's agent: got {listed}, want {}",
                        expected[column]
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cells} cells failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// With the default identity configuration, a caller in a group named `admins` (or with any
/// other claim) is an ordinary user: another owner's agents are 404 to them.
#[tokio::test]
async fn nobody_is_an_admin_unless_configured() {
    let (world, api) = dynamo_api("authorization-no-admins", IdentityConfig::default()).await;
    let asleep = asleep_agent(&world);
    let legacy = legacy_agent(&world);
    let awake = awake_agent(&world);
    let would_be_admin = Who::Admin("root");

    let agent = format!("/v1/agents/codex/{}", asleep.id);
    let cases: Vec<(&str, String, &str, Option<String>)> = vec![
        ("GET", agent.clone(), "", None),
        ("GET", format!("/v1/agents/codex/{}", legacy.id), "", None),
        ("GET", "/v1/agents".into(), "owner=alice", None),
        ("GET", "/v1/agents".into(), "owner=*", None),
        ("POST", format!("{agent}/resume"), "", None),
        (
            "POST",
            format!("/v1/agents/codex/{}/resume", legacy.id),
            "",
            None,
        ),
        ("POST", format!("{agent}/sleep"), "", None),
        (
            "POST",
            format!("/v1/agents/codex/{}/sleep", awake.id),
            "",
            None,
        ),
        (
            "POST",
            format!("/v1/agents/codex/{}/sleep", legacy.id),
            "",
            None,
        ),
        (
            "POST",
            format!("/v1/agents/codex/{}/keepalive", awake.id),
            "",
            Some(KEEPALIVE_BODY.to_string()),
        ),
        (
            "POST",
            format!("{agent}/keepalive"),
            "",
            Some(KEEPALIVE_BODY.to_string()),
        ),
        (
            "DELETE",
            format!("{agent}/snapshots/{}", asleep.snapshot),
            "",
            None,
        ),
        ("DELETE", agent.clone(), "", None),
        (
            "DELETE",
            format!("/v1/agents/codex/{}", legacy.id),
            "",
            None,
        ),
    ];
    let mut failures = Vec::new();
    for (method, path, query, body) in &cases {
        let (resp, request_id) =
            call(&api, method, path, query, would_be_admin, body.as_deref()).await;
        let (got, body) = answer(&resp);
        if got != 404 || body["code"] != "AGENT_NOT_FOUND" {
            failures.push(format!("{method} {path}?{query}: got {got} {body}"));
        } else if let Some(fault) = problem_fault(&resp, 404, Some(&request_id)) {
            failures.push(format!("{method} {path}?{query}: {fault}"));
        }
    }
    assert!(failures.is_empty(), "\n  {}", failures.join("\n  "));
    assert!(untouched(&world, &asleep) && untouched(&world, &legacy));
    assert!(untouched(&world, &awake));
    // The would-be admin's own list works, without anyone else's agents.
    let (resp, _) = call(&api, "GET", "/v1/agents", "", would_be_admin, None).await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 200, "{body}");
    assert!(!lists(&body, &asleep.id), "{body}");
    // The owner is unaffected.
    let (resp, _) = call(&api, "GET", &agent, "", Who::User("alice"), None).await;
    assert_eq!(resp.status().as_u16(), 200, "{:?}", answer(&resp).1);
}
