//! No secret, signature, bearer token or session Endpoint appears in any response or log line
//! (docs/security.md): a canary secret key and session token go through the whole flow —
//! create, list, expiry into a snapshot, resume, get, delete snapshot, delete agent, plus
//! refusals and a client signing with the wrong secret — on DynamoDB Local and the simulator.
//! Every event carries a canary bearer token, and every request of the flow runs inside the
//! real Lambda runtime loop (a fake Runtime API hands it the events), which logs each raw event
//! at `trace`. The log setup is the functions' own, at `RUST_LOG=trace`, captured in memory.
//!
//! This binary holds one test because it installs the global subscriber.

use std::sync::Arc;
use std::time::Duration;

use snapwake::agentkit::types::Secret;
use snapwake::agentkit::Credentials;
use snapwake::bootstrap::logs::log_layer;
use snapwake::store::dynamo::DynamoStore;
use snapwake_sim::SimConfig;
use snapwake_tests::captured_log::CapturedLog;
use snapwake_tests::runtime_api::{serve_in_lambda_loop, Answer, RuntimeApi};
use snapwake_tests::*;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

const SECRET: &str = "canary-SECRET-8d1f";
const TOKEN: &str = "canary-TOKEN-51c9e";
const WRONG_SECRET: &str = "canary-WRONG-SECRET-77aa";
/// The caller's token, in the `authorization` header of every event.
const BEARER: &str = "eyJhbGciOiJSUzI1NiJ9.canary-BEARER-4e1b.c2lnbmF0dXJl";

/// Every response of the flow as text: status, headers and body.
#[derive(Default)]
struct Transcript {
    responses: Vec<String>,
}

impl Transcript {
    /// Record `resp` and answer its status and JSON body.
    fn record(
        &mut self,
        step: &str,
        resp: &lambda_http::Response<lambda_http::Body>,
    ) -> (u16, serde_json::Value) {
        let mut text = format!("{step}: {}\n", resp.status());
        for (name, value) in resp.headers() {
            text.push_str(&format!(
                "{name}: {}\n",
                String::from_utf8_lossy(value.as_bytes())
            ));
        }
        match resp.body() {
            lambda_http::Body::Text(t) => text.push_str(t),
            lambda_http::Body::Binary(b) => text.push_str(&String::from_utf8_lossy(b)),
            _ => {}
        }
        self.responses.push(text);
        answer(resp)
    }

    /// Record what the function posted to the Runtime API (an API Gateway response) and
    /// answer its status and JSON body.
    fn record_answer(&mut self, step: &str, answer: Answer) -> (u16, serde_json::Value) {
        let Answer::Response(resp) = answer else {
            panic!("{step}: the function failed the invocation: {answer:?}");
        };
        self.responses.push(format!("{step}: {resp}"));
        let status = resp["statusCode"].as_u64().unwrap_or(0) as u16;
        let body = resp["body"]
            .as_str()
            .and_then(|b| serde_json::from_str(b).ok())
            .unwrap_or(serde_json::Value::Null);
        (status, body)
    }
}

/// `event` with the caller's bearer token in it, as API Gateway passes it on.
fn bearer(mut event: serde_json::Value) -> serde_json::Value {
    event["headers"]["authorization"] = format!("Bearer {BEARER}").into();
    event
}

/// The session Endpoints the simulator holds now.
fn endpoints(world: &World) -> Vec<String> {
    world
        .sim
        .control()
        .sessions()
        .into_iter()
        .filter_map(|s| s.endpoint.map(Secret::into_exposed))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_signature_or_endpoint_reaches_a_response_or_a_log_line() {
    // The functions' own log setup, at the level someone chasing a bug would pick, in the
    // Lambda environment the runtime reads (set before any other thread reads it).
    let runtime_api = RuntimeApi::start().await;
    std::env::set_var("RUST_LOG", "trace");
    for (name, value) in runtime_api.environment("snapwake-canary") {
        std::env::set_var(name, value);
    }
    let logs = CapturedLog::default();
    let writer = logs.clone();
    tracing_subscriber::registry()
        .with(log_layer(move || writer.clone(), true))
        .try_init()
        .expect("the only subscriber of this test binary");

    let credentials = Credentials::new("AKcanary", SECRET, Some(TOKEN.to_string()));
    let world = World::start_with(SimConfig {
        credentials: credentials.clone(),
        ..SimConfig::default()
    })
    .await;
    let store = Arc::new(dynamo_store("canary").await);
    world.register(&store).await;
    let endpoint = world.sim.endpoint();
    let api: Arc<Api<Arc<DynamoStore>, _>> = Arc::new(Api::new(
        store.clone(),
        client_with(&endpoint, credentials),
        identity(),
    ));
    // Every request of the flow goes through the real Lambda runtime loop, as deployed.
    serve_in_lambda_loop(api.clone());
    let lambda = &runtime_api;
    let mut seen_endpoints = Vec::new();
    let mut t = Transcript::default();
    let alice = Who::User("alice");

    // Create.
    let (status, created) = t.record_answer(
        "create",
        lambda
            .invoke(&bearer(event(
                "POST",
                "/v1/agents",
                alice,
                Some(r#"{"kind":"codex","display_name":"Canary","retention":"recoverable"}"#),
            )))
            .await,
    );
    assert_eq!(status, 201, "{created}");
    let agent_id = created["agent_id"].as_str().unwrap().to_string();
    let agent = format!("/v1/agents/codex/{agent_id}");
    seen_endpoints.extend(endpoints(&world));

    // The session expires into a snapshot (simulated time), and the agent sleeps.
    world.sim.control().advance(Duration::from_secs(9 * 3600));
    let (status, listed) = t.record_answer(
        "list",
        lambda
            .invoke(&bearer(event("GET", "/v1/agents", alice, None)))
            .await,
    );
    assert_eq!(status, 200, "{listed}");
    assert!(
        listed["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["agent_id"] == agent_id.as_str()),
        "{listed}"
    );

    // Resume, then get.
    let (status, resumed) = t.record_answer(
        "resume",
        lambda
            .invoke(&bearer(event(
                "POST",
                &format!("{agent}/resume"),
                alice,
                None,
            )))
            .await,
    );
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["state"], "awake", "{resumed}");
    seen_endpoints.extend(endpoints(&world));
    let (status, got) = t.record_answer(
        "get",
        lambda
            .invoke(&bearer(event("GET", &agent, alice, None)))
            .await,
    );
    assert_eq!(status, 200, "{got}");
    let snapshot = got["snapshots"][0]["snapshot_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the expired session left a snapshot: {got}"))
        .to_string();

    // Refusals: another owner, bad input.
    let (status, _) = t.record_answer(
        "foreign get",
        lambda
            .invoke(&bearer(event("GET", &agent, Who::User("bob"), None)))
            .await,
    );
    assert_eq!(status, 404);
    let (status, _) = t.record_answer(
        "bad resume body",
        lambda
            .invoke(&bearer(event(
                "POST",
                &format!("{agent}/resume"),
                alice,
                Some(r#"{"snapshot_id":"a/b"}"#),
            )))
            .await,
    );
    assert_eq!(status, 400);

    // A client signing with the wrong secret: AgentKit refuses it, snapwake answers a problem.
    let wrong = Api::new(
        store.clone(),
        client_with(
            &endpoint,
            Credentials::new("AKcanary", WRONG_SECRET, Some(TOKEN.to_string())),
        ),
        identity(),
    );
    let (status, refused) = t.record(
        "wrong secret",
        &wrong
            .handle(from_event(&bearer(event("GET", &agent, alice, None))))
            .await,
    );
    assert!(status >= 500, "{status} {refused}");
    let direct_request_id = refused["request_id"].as_str().map(str::to_string);

    // Delete the snapshot, then the agent.
    let (status, body) = t.record_answer(
        "delete snapshot",
        lambda
            .invoke(&bearer(event(
                "DELETE",
                &format!("{agent}/snapshots/{snapshot}"),
                alice,
                None,
            )))
            .await,
    );
    assert_eq!(status, 204, "{body}");
    seen_endpoints.extend(endpoints(&world));
    let (status, body) = t.record_answer(
        "delete agent",
        lambda
            .invoke(&bearer(event("DELETE", &agent, alice, None)))
            .await,
    );
    assert_eq!(status, 204, "{body}");

    seen_endpoints.sort();
    seen_endpoints.dedup();
    assert!(
        seen_endpoints.len() >= 2 && seen_endpoints.iter().all(|e| e.contains("auth=")),
        "the flow had sessions with Endpoints: {seen_endpoints:?}"
    );
    let logs = logs.text();
    // The capture works, is at trace level and saw the runtime loop: AgentKit calls, store
    // calls, refusals and the runtime's own lines show.
    for expected in [
        "ResumeSessionFromSnapshot",
        "agentkit answered",
        agent_id.as_str(),
        "refused",
        r#""level":"TRACE""#,
        // The invocation's Lambda request id, which only the runtime loop gives.
        r#""aws_request_id":"#,
    ] {
        assert!(
            logs.contains(expected),
            "the captured log lacks {expected:?}: capture is broken"
        );
    }

    // Every line the handlers log carries the ids of its invocation, Lambda's and API
    // Gateway's, at the top level (docs/operations.md, "Logs"): also the lines of the wake, the
    // sleep, the lock and the edge, deep under the handler. The targets here run only inside
    // an invocation (the test's own setup logs through the simulator and the store).
    let inside = [
        "snapwake_create",
        "snapwake_resume",
        "snapwake_list",
        "snapwake_delete",
        "snapwake::wake",
        "snapwake::sleep",
        "snapwake::lock",
        "snapwake::http",
    ];
    let mut checked = 0;
    for line in logs.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let target = v["target"].as_str().unwrap_or_default();
        if !inside.iter().any(|t| target.starts_with(t)) {
            continue;
        }
        checked += 1;
        let apigw = v["apigw_request_id"].as_str().unwrap_or_default();
        assert!(
            !apigw.is_empty(),
            "a handler's line without apigw_request_id: {line:.400}"
        );
        // The wrong-secret request was handled directly, not by the runtime loop: Lambda gave
        // it no request id.
        if Some(apigw) != direct_request_id.as_deref() {
            assert!(
                v["aws_request_id"].as_str().is_some_and(|s| !s.is_empty()),
                "a handler's line without aws_request_id: {line:.400}"
            );
        }
    }
    assert!(checked >= 10, "only {checked} handler lines were logged");

    let mut needles: Vec<String> = vec![
        SECRET.into(),
        TOKEN.into(),
        WRONG_SECRET.into(),
        BEARER.into(),
        "canary-BEARER".into(),
        "Signature=".into(),
        "?auth=".into(),
    ];
    needles.extend(seen_endpoints);
    let mut leaks = Vec::new();
    for needle in &needles {
        for line in logs.lines().filter(|l| l.contains(needle.as_str())) {
            leaks.push(format!("log line has {needle:?}: {line:.400}"));
        }
        for resp in t.responses.iter().filter(|r| r.contains(needle.as_str())) {
            leaks.push(format!("response has {needle:?}: {resp:.400}"));
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leaks:\n  {}",
        leaks.len(),
        leaks.join("\n  ")
    );
}
