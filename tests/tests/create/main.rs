//! The create function end to end: API Gateway v2 requests into the handler, agent records and
//! idempotency documents on DynamoDB Local (and the in-memory store where it is cheap),
//! AgentKit simulated over HTTP.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::list_all;
use snapwake::agentkit::types::{metadata_value, Filter, ListSessions};
use snapwake::domain::{AgentKey, Kind, Retention, WakeState};
use snapwake::identity::caller;
use snapwake::invocation::Deadline;
use snapwake::store::memory::MemoryStore;
use snapwake::store::{AgentStore, DocumentKey};
use snapwake_create::CreateSettings;
use snapwake_sim::Fault;
use snapwake_tests::lost_answers::LostAnswers;
use snapwake_tests::*;

fn body(kind: &str, name: &str, retention: Option<&str>) -> String {
    let mut v = serde_json::json!({"kind": kind, "display_name": name});
    if let Some(r) = retention {
        v["retention"] = r.into();
    }
    v.to_string()
}

/// Alice's create of a codex agent named `name`, with `idempotency_key` if any.
fn alices_create(name: &str, idempotency_key: Option<&str>) -> lambda_http::Request {
    create_request(
        Who::User("alice"),
        &body("codex", name, None),
        idempotency_key,
    )
}

fn agent_id(body: &Value) -> String {
    body["agent_id"].as_str().unwrap_or_default().to_string()
}

fn creates(world: &World) -> u64 {
    world.received("CreateSession")
}

/// Sessions with `user_session_id` on `tool` (any status), as AgentKit lists them.
async fn sessions_on(world: &World, tool: &str, user_session_id: &str) -> usize {
    let req = ListSessions {
        tool_id: tool.into(),
        filters: Some(vec![Filter::one("UserSessionId", user_session_id)]),
        ..ListSessions::default()
    };
    let deadline = Deadline::after(Duration::from_secs(10));
    list_all(&world.client(), REGION, req, 10, deadline)
        .await
        .unwrap()
        .len()
}

fn assert_problem(resp: &lambda_http::Response<lambda_http::Body>, status: u16, code: &str) {
    let (got, body) = answer(resp);
    assert_eq!(got, status, "{body}");
    assert_eq!(
        header_of(resp, "content-type"),
        Some("application/problem+json")
    );
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["status"], status);
}

mod creating;
mod half_succeeded;
mod idempotency;
mod recovery;
mod racing_delete;
