//! Keepalive end to end: API Gateway v2 requests into the resume function, agent records on
//! DynamoDB Local, AgentKit simulated over HTTP. `POST /v1/agents/{kind}/{agent_id}/keepalive`
//! `{"ttl_s"}` makes the live session last `ttl_s` more seconds from now, measured on
//! AgentKit's (the simulator's) clock; the record's copy of the expiry follows, so an agent
//! kept alive is not taken for expired at its old time. Out-of-range TTLs and bad bodies are
//! refused before anything reaches AgentKit; an agent without a live session, deleted, or held
//! by a sleep is refused too.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::AgentKitClient;
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::identity::caller;
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::AgentStore;
use snapwake_sim::{SeedSession, SimControl};
use snapwake_tests::*;
use time::OffsetDateTime;

type DynamoApi = Api<Arc<DynamoStore>, AgentKitClient>;

const ALICE: Who<'static> = Who::User("alice");
const HOUR: Duration = Duration::from_secs(3600);

/// The simulator, a fresh table with the registry, and every function over them.
async fn setup(test: &str) -> (World, Arc<DynamoStore>, DynamoApi, SimControl) {
    let world = World::start(Duration::ZERO).await;
    let store = Arc::new(dynamo_store(test).await);
    world.register(&store).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let ctl = world.sim.control();
    (world, store, api, ctl)
}

/// `method path` by `who` with `body`, through the dispatcher.
async fn call(
    api: &DynamoApi,
    method: &str,
    path: &str,
    who: Who<'_>,
    body: Option<&str>,
) -> lambda_http::Response<lambda_http::Body> {
    api.handle(request(method, path, who, body)).await
}

/// `method` on Alice's codex agent `agent_id` itself (`/v1/agents/codex/{agent_id}`).
async fn on_agent(
    api: &DynamoApi,
    method: &str,
    agent_id: &str,
) -> lambda_http::Response<lambda_http::Body> {
    let path = format!("/v1/agents/codex/{agent_id}");
    call(api, method, &path, ALICE, None).await
}

/// Alice's create of a temporary codex agent, "Scratch".
async fn create_scratch(api: &DynamoApi) -> lambda_http::Response<lambda_http::Body> {
    let body = r#"{"kind":"codex","display_name":"Scratch","retention":"temporary"}"#;
    call(api, "POST", "/v1/agents", ALICE, Some(body)).await
}

/// `POST …/{verb}` on Alice's codex agent `agent_id`.
async fn post(
    api: &DynamoApi,
    agent_id: &str,
    verb: &str,
    body: Option<&str>,
) -> lambda_http::Response<lambda_http::Body> {
    let path = format!("/v1/agents/codex/{agent_id}/{verb}");
    call(api, "POST", &path, ALICE, body).await
}

/// A keepalive of `ttl_s` by Alice.
async fn keepalive(api: &DynamoApi, agent_id: &str, ttl_s: u64) -> (u16, Value) {
    let body = format!(r#"{{"ttl_s":{ttl_s}}}"#);
    let resp = post(api, agent_id, "keepalive", Some(&body)).await;
    let (status, body) = answer(&resp);
    if status == 200 {
        // The ETag header is the record's version, like the body's `etag`.
        assert_eq!(
            header_of(&resp, "etag").map(str::to_string),
            body["etag"].as_str().map(str::to_string),
            "{body}"
        );
    }
    (status, body)
}

/// An awake agent of Alice, woken by a resume (so it has a record): (agent id, session id).
async fn awake_agent(world: &World, api: &DynamoApi) -> (String, String) {
    let (agent_id, _) = world.asleep_agent("alice", "Kept alive");
    let (status, body) = answer(&post(api, &agent_id, "resume", None).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "awake", "{body}");
    let session = body["session"]["session_id"].as_str().unwrap().to_string();
    (agent_id, session)
}

fn sent_ttls(ctl: &SimControl) -> u64 {
    ctl.counters().received("SetSessionTtl")
}

fn ts(s: &str) -> OffsetDateTime {
    snapwake::ambient::parse(s).unwrap_or_else(|| panic!("not a timestamp: {s:?}"))
}

/// The `session.expire_at` of an answer.
fn expire_at(body: &Value) -> OffsetDateTime {
    ts(body["session"]["expire_at"]
        .as_str()
        .unwrap_or_else(|| panic!("no session.expire_at: {body}")))
}

/// The simulator's own idea of the session's expiry.
fn sim_expiry(ctl: &SimControl, session_id: &str) -> OffsetDateTime {
    let s = ctl
        .session(session_id)
        .unwrap_or_else(|| panic!("session {session_id} is gone"));
    ts(s.expire_at.as_deref().unwrap())
}

/// The record's copy of the session expiry.
async fn recorded_expiry(store: &DynamoStore, agent_id: &str) -> Option<String> {
    store
        .get(&AgentKey::new(Kind::Codex, agent_id))
        .await
        .unwrap()
        .and_then(|r| r.session_expire_at)
}

/// A keepalive of `ttl_s` that must answer 200 and move the expiry to `ttl_s` from the
/// simulator's now (AgentKit writes whole seconds): answers the new expiry.
async fn kept_alive(
    api: &DynamoApi,
    ctl: &SimControl,
    agent_id: &str,
    session_id: &str,
    ttl_s: u64,
) -> OffsetDateTime {
    let before = ctl.now().unix_timestamp();
    let (status, body) = keepalive(api, agent_id, ttl_s).await;
    let after = ctl.now().unix_timestamp();
    assert_eq!(status, 200, "keepalive {ttl_s}: {body}");
    assert_no_endpoint(&body);
    assert_eq!(body["ttl_s"], ttl_s, "{body}");
    assert_eq!(body["state"], "awake", "{body}");
    assert_eq!(body["agent_id"], agent_id, "{body}");
    assert_eq!(body["session"]["session_id"], session_id, "{body}");
    let new = expire_at(&body);
    let ttl = ttl_s as i64;
    assert!(
        (before + ttl..=after + ttl).contains(&new.unix_timestamp()),
        "keepalive {ttl_s}: expire_at {new} is not {ttl_s} s after the simulator's now \
         ({before}..={after})"
    );
    assert_eq!(
        sim_expiry(ctl, session_id),
        new,
        "AgentKit's session expires when the answer says"
    );
    new
}

/// No session Endpoint (nor its auth query string) in an answer.
fn assert_no_endpoint(body: &Value) {
    let text = body.to_string();
    assert!(
        !text.to_ascii_lowercase().contains("endpoint")
            && !text.contains("sandbox.example")
            && !text.contains("auth="),
        "an answer carries a session endpoint: {text}"
    );
}

/// A problem+json answer of `status` and `code`.
fn assert_problem(resp: &lambda_http::Response<lambda_http::Body>, status: u16, code: &str) {
    if let Some(fault) = problem_fault(resp, status, None) {
        panic!("not a {status} problem: {fault}");
    }
    let (_, body) = answer(resp);
    assert_eq!(body["code"], code, "{body}");
    assert_no_endpoint(&body);
}

mod expiry;
mod ttls_and_bodies;
mod agent_states;
