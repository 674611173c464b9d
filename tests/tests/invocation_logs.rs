//! Every line a function logs while it handles an invocation carries the invocation's ids at
//! the top level of its JSON line (docs/operations.md, "Logs"): `aws_request_id` (Lambda's) in
//! every function, `apigw_request_id` (API Gateway's `requestContext.requestId`) for an HTTP
//! request — the lines of the function's own code, and those logged deep in shared code (the
//! AgentKit client, wake, the sweep), on whichever worker thread polled them.
//!
//! The requests are API Gateway events built from the recorded fixture
//! (tests/fixtures/apigw/jwt-no-groups.json), the events EventBridge's
//! (tests/fixtures/eventbridge/), on DynamoDB Local and the simulator. Each is handled as in
//! Lambda: the handler directly with the Lambda context `lambda_http` attaches, then through the
//! real runtime loop on a fake Runtime API. The log setup is the functions' own (JSON), into
//! memory, with the lines of everything an invocation calls down to `debug`.
//!
//! This binary holds one test because it installs the global subscriber.

use std::sync::Arc;
use std::time::Duration;

use lambda_http::RequestExt;
use serde_json::{json, Value};
use snapwake::ambient::now_ms;
use snapwake::bootstrap::logs::log_layer_with;
use snapwake::store::dynamo::DynamoStore;
use snapwake_tests::captured_log::CapturedLog;
use snapwake_tests::runtime_api::{serve_in_lambda_loop, Answer, RuntimeApi};
use snapwake_tests::*;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Our crates down to `debug` (the AgentKit client logs each call there), the Lambda runtime's
/// own lines, warnings of the rest. Not the simulator: another service, which only happens to
/// run in this process, its lines no invocation's.
const DIRECTIVES: &str =
    "warn,snapwake=debug,snapwake_sim=off,lambda_runtime=debug,lambda_http=debug";

/// The Lambda context `lambda_runtime` makes of an invocation with request id `id`.
fn lambda_context(id: &str) -> lambda_http::Context {
    let mut context = lambda_http::Context::default();
    context.request_id = id.to_string();
    context.deadline = now_ms() + 60_000;
    context
}

/// An EventBridge payload of tests/fixtures/eventbridge/.
fn eventbridge(name: &str) -> Value {
    let path = format!("{}/fixtures/eventbridge/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("the fixture")).expect("JSON")
}

/// Every one of `lines` (at least one) carries Lambda's id `aws` and API Gateway's `apigw`
/// (`None`: no such member at all).
#[track_caller]
fn all_carry(what: &str, lines: &[Value], aws: &str, apigw: Option<&str>) {
    assert!(!lines.is_empty(), "{what}: nothing was logged");
    for line in lines {
        assert_eq!(line["aws_request_id"], aws, "{what}: {line}");
        match apigw {
            Some(id) => assert_eq!(line["apigw_request_id"], id, "{what}: {line}"),
            None => assert!(line.get("apigw_request_id").is_none(), "{what}: {line}"),
        }
    }
}

/// Whether one of `lines` was logged under a target starting with `prefix`.
fn from(lines: &[Value], prefix: &str) -> bool {
    lines
        .iter()
        .any(|l| l["target"].as_str().is_some_and(|t| t.starts_with(prefix)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_of_an_invocation_carries_its_request_ids() {
    // The Lambda environment the runtime loop reads, set before any other thread reads it.
    let runtime_api = RuntimeApi::start().await;
    for (name, value) in runtime_api.environment("snapwake-invocation-logs") {
        std::env::set_var(name, value);
    }
    let logs = CapturedLog::default();
    let writer = logs.clone();
    tracing_subscriber::registry()
        .with(log_layer_with(
            move || writer.clone(),
            true,
            DIRECTIVES.parse().expect("directives"),
        ))
        .try_init()
        .expect("the only subscriber of this test binary");

    let world = World::start(Duration::from_millis(200)).await;
    let store = Arc::new(dynamo_store("invocation-logs").await);
    world.register(&store).await;
    let api: Arc<Api<Arc<DynamoStore>, _>> =
        Arc::new(Api::new(store.clone(), world.client(), identity()));
    let alice = Who::User("alice");

    // The control: a line outside any invocation carries no id, so the checks below can tell.
    let ((), outside) = logs
        .around(async { tracing::info!(target: "snapwake::test", "outside any invocation") })
        .await;
    assert_eq!(outside.len(), 1, "{outside:?}");
    assert!(outside[0].get("aws_request_id").is_none(), "{outside:?}");
    assert!(outside[0].get("apigw_request_id").is_none(), "{outside:?}");

    // An HTTP request: wake an asleep agent, held until it is awake. The wake protocol and the
    // AgentKit client log on the way, from shared code and from futures polled on either worker.
    let (agent, _) = world.asleep_agent("alice", "Logged");
    let resume = event(
        "POST",
        &format!("/v1/agents/codex/{agent}/resume"),
        alice,
        None,
    );
    let apigw = request_id_of(&resume);
    let request =
        prefer_wait(from_event(&resume), 5).with_lambda_context(lambda_context("aws-resume"));
    let (resp, lines) = logs.around(api.handle(request)).await;
    assert_eq!(resp.status(), 200, "{:?}", answer(&resp));
    all_carry("resume", &lines, "aws-resume", Some(&apigw));
    assert!(
        from(&lines, "snapwake::agentkit"),
        "the AgentKit client's lines: {lines:#?}"
    );
    assert!(
        from(&lines, "snapwake::wake"),
        "the wake's lines: {lines:#?}"
    );

    // A refused request: the edge's line for it is the invocation's too.
    let nothing = snapwake::identity::caller::mint("alice");
    let missing = event("GET", &format!("/v1/agents/codex/{nothing}"), alice, None);
    let apigw = request_id_of(&missing);
    let request = from_event(&missing).with_lambda_context(lambda_context("aws-missing"));
    let (resp, lines) = logs.around(api.handle(request)).await;
    assert_eq!(resp.status(), 404, "{:?}", answer(&resp));
    all_carry("refused", &lines, "aws-missing", Some(&apigw));
    assert!(
        from(&lines, "snapwake::http::edge"),
        "the edge's line: {lines:#?}"
    );

    // Event-driven: the delete function's schedule (an EventBridge Scheduled Event) sweeps
    // every Tool, and its offboarding event is refused (no source is configured): Lambda's id
    // on every line, and no API Gateway id where there is none.
    let (report, lines) = logs
        .around(api.delete.invoke(
            eventbridge("scheduled-event.json"),
            lambda_context("aws-sweep"),
        ))
        .await;
    report.expect("the sweep's report");
    all_carry("sweep", &lines, "aws-sweep", None);
    assert!(
        from(&lines, "snapwake_delete"),
        "the sweep's report line: {lines:#?}"
    );
    assert!(
        from(&lines, "snapwake::agentkit"),
        "the sweep's AgentKit calls: {lines:#?}"
    );
    let (refused, lines) = logs
        .around(api.delete.invoke(
            eventbridge("owner-offboarded.json"),
            lambda_context("aws-offboard"),
        ))
        .await;
    assert_eq!(refused.expect("a refusal, not an error")["refused"], true);
    all_carry("offboarding", &lines, "aws-offboard", None);

    // An API Gateway request the delete function takes as an event: both ids.
    let delete = event("DELETE", &format!("/v1/agents/codex/{agent}"), alice, None);
    let apigw = request_id_of(&delete);
    let (deleted, lines) = logs
        .around(api.delete.invoke(delete, lambda_context("aws-delete")))
        .await;
    assert_eq!(deleted.expect("an answer")["statusCode"], 204);
    all_carry("delete", &lines, "aws-delete", Some(&apigw));

    // Through the real runtime loop, as deployed: the runtime's context reaches the span, and
    // the runtime's own line about an event it cannot read carries Lambda's id too.
    serve_in_lambda_loop(api.clone());
    let listing = event("GET", "/v1/agents", alice, None);
    let apigw = request_id_of(&listing);
    let (answered, lines) = logs
        .around(runtime_api.invoke_as("aws-runtime-list", &listing))
        .await;
    assert!(matches!(answered, Answer::Response(_)), "{answered:?}");
    all_carry(
        "list in the runtime loop",
        &lines,
        "aws-runtime-list",
        Some(&apigw),
    );
    let (answered, lines) = logs
        .around(runtime_api.invoke_as("aws-runtime-unreadable", &json!("not an API Gateway event")))
        .await;
    assert!(matches!(answered, Answer::Error(_)), "{answered:?}");
    all_carry(
        "an unreadable event",
        &lines,
        "aws-runtime-unreadable",
        None,
    );
    assert!(
        from(&lines, "lambda_runtime"),
        "the runtime's own line: {lines:#?}"
    );
}
