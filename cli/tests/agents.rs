//! `snapwake agents …`, the client of the deployed API: against a fake API Gateway (axum on
//! port 0) that answers each of the gateway's own shapes (docs/http-api.md, "Errors API
//! Gateway answers itself"), checking the exit code, the stderr message, what was retried and
//! that the token never shows. The happy path against `snapwake serve --demo` is
//! `agents_serve.rs`.

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;

/// A token that must appear in no output.
const CANARY: &str = "eyJcanary.token-0f3c9a-never-print-me";

/// One scripted answer of the fake gateway.
#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, &'static str)>,
    body: String,
}

fn reply(status: u16, headers: &[(&'static str, &'static str)], body: &str) -> Reply {
    Reply {
        status,
        headers: headers.to_vec(),
        body: body.to_string(),
    }
}

/// API Gateway's own answer: `{"message": …}` as `application/json`, with its request id.
fn gateway(status: u16, message: &str, extra: &[(&'static str, &'static str)]) -> Reply {
    let mut headers = vec![
        ("content-type", "application/json"),
        ("apigw-requestid", "Mc7UVioPPHcEKPA="),
    ];
    headers.extend_from_slice(extra);
    reply(status, &headers, &format!(r#"{{"message":"{message}"}}"#))
}

fn ok(body: &str) -> Reply {
    reply(200, &[("content-type", "application/json")], body)
}

/// What the fake gateway received.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    prefer: Option<String>,
    at: Instant,
}

#[derive(Clone)]
struct Script {
    replies: Arc<Vec<Reply>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// The fake API Gateway: answers the scripted replies in order, then the last one forever.
struct Fake {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    fn start(replies: Vec<Reply>) -> Fake {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Script {
            replies: Arc::new(replies),
            seen: seen.clone(),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                tx.send(listener.local_addr().expect("address"))
                    .expect("send address");
                let app = axum::Router::new().fallback(answer).with_state(script);
                axum::serve(listener, app).await.expect("serve");
            });
        });
        let addr = rx.recv().expect("the fake gateway's address");
        Fake {
            url: format!("http://{addr}"),
            seen,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

async fn answer(State(script): State<Script>, request: Request) -> Response {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let n = {
        let mut seen = script.seen.lock().expect("lock");
        seen.push(Seen {
            method: request.method().to_string(),
            path: request.uri().path().to_string(),
            authorization: header("authorization"),
            prefer: header("prefer"),
            at: Instant::now(),
        });
        seen.len() - 1
    };
    let r = &script.replies[n.min(script.replies.len() - 1)];
    let mut builder = Response::builder().status(r.status);
    for (k, v) in &r.headers {
        builder = builder.header(*k, *v);
    }
    builder.body(Body::from(r.body.clone())).expect("response")
}

/// `snapwake agents <args>` against `url` with the canary token from the environment.
fn agents(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .arg("agents")
        .args(args)
        .env("SNAPWAKE_API_URL", url)
        .env("SNAPWAKE_TOKEN", CANARY)
        .output()
        .expect("run snapwake agents")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// The exit code and stderr, and that the token shows nowhere.
fn check(out: &Output, code: i32, says: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    for s in says {
        assert!(err.contains(s), "expected {s:?} in:\n{err}");
    }
    let all = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert!(!all.contains(CANARY), "the token was printed:\n{all}");
    assert!(
        !all.contains("{\"message\":"),
        "raw JSON was printed:\n{all}"
    );
}

fn retries_announced(out: &Output) -> usize {
    stderr(out).matches("asking again in").count()
}

const LISTING: &str = r#"{"agents":[{"kind":"codex","agent_id":"a1","state":"asleep"}],
    "truncated":false,"partial":[],"as_of":"2026-01-01T00:00:00Z"}"#;

#[test]
fn the_authorizers_401_says_sign_in_again_and_is_not_retried() {
    let fake = Fake::start(vec![gateway(
        401,
        "Unauthorized",
        &[(
            "www-authenticate",
            r#"Bearer scope="" error="invalid_token" error_description="the token has expired""#,
        )],
    )]);
    let out = agents(&fake.url, &["list"]);
    check(
        &out,
        77,
        &[
            "snapwake: API Gateway refused the token (401 Unauthorized: the token has expired): \
             sign in again for a fresh token",
            "(request Mc7UVioPPHcEKPA=)",
        ],
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 1, "a refused token is not sent again");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {CANARY}").as_str())
    );
}

#[test]
fn throttling_is_retried_with_back_off_then_answered() {
    // Behind a stage path: every request goes under it.
    let fake = Fake::start(vec![
        gateway(429, "Too Many Requests", &[("retry-after", "1")]),
        gateway(429, "Too Many Requests", &[]),
        ok(LISTING),
    ]);
    let out = agents(&format!("{}/prod", fake.url), &["list"]);
    check(
        &out,
        0,
        &["snapwake: API Gateway answered 429 Too Many Requests; asking again in 1.0 s (attempt 2 of 4)"],
    );
    assert_eq!(retries_announced(&out), 2);
    let seen = fake.seen();
    assert_eq!(seen.len(), 3);
    assert!(seen
        .iter()
        .all(|s| s.method == "GET" && s.path == "/prod/v1/agents"));
    // Retry-After was honoured; without it, back-off (at least 0.25 s for the first).
    assert!(seen[1].at - seen[0].at >= Duration::from_millis(950));
    assert!(seen[2].at - seen[1].at >= Duration::from_millis(240));
    let listing: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(listing["agents"][0]["agent_id"], "a1");
}

#[test]
fn throttling_that_does_not_stop_is_reported_after_the_retries() {
    let fake = Fake::start(vec![gateway(429, "Too Many Requests", &[])]);
    let out = agents(&fake.url, &["list", "--retries", "2"]);
    check(
        &out,
        75,
        &[
            "snapwake: API Gateway throttled the request (429 Too Many Requests): the API's \
             rate limit was reached; wait a minute and run the command again",
            "(tried 3 times)",
        ],
    );
    assert_eq!(retries_announced(&out), 2);
    assert_eq!(fake.seen().len(), 3);
}

#[test]
fn a_gateway_timeout_on_wake_is_retried_and_the_wake_followed_to_the_end() {
    let fake = Fake::start(vec![
        gateway(503, "Service Unavailable", &[]),
        reply(
            202,
            &[("content-type", "application/json"), ("retry-after", "1")],
            r#"{"kind":"codex","agent_id":"a1","state":"waking","resumed":false}"#,
        ),
        ok(r#"{"kind":"codex","agent_id":"a1","state":"awake","resumed":true}"#),
    ]);
    let out = agents(&fake.url, &["wake", "codex", "a1"]);
    check(
        &out,
        0,
        &[
            "API Gateway answered 503 Service Unavailable; asking again in",
            "codex/a1 is still waking (waking); asking again in 1.0 s",
            "codex/a1 is awake",
        ],
    );
    let seen = fake.seen();
    assert_eq!(seen.len(), 3);
    for s in &seen {
        assert_eq!(
            (s.method.as_str(), s.path.as_str()),
            ("POST", "/v1/agents/codex/a1/resume")
        );
        assert_eq!(s.prefer.as_deref(), Some("wait=20"));
    }
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(view["state"], "awake");
}

#[test]
fn a_gateway_timeout_that_persists_is_reported_as_safe_to_repeat() {
    let fake = Fake::start(vec![gateway(503, "Service Unavailable", &[])]);
    let out = agents(&fake.url, &["sleep", "codex", "a1", "--retries", "1"]);
    check(
        &out,
        75,
        &[
            "snapwake: API Gateway stopped waiting for snapwake (503 Service Unavailable): the \
             function did not answer within the gateway's 30 s; it may still have acted, and a \
             wake or sleep is safe to run again",
            "(tried 2 times)",
        ],
    );
    assert_eq!(fake.seen().len(), 2);
    assert_eq!(retries_announced(&out), 1);
}

#[test]
fn a_failed_function_is_reported_with_the_request_id_and_not_retried() {
    let fake = Fake::start(vec![gateway(500, "Internal Server Error", &[])]);
    let out = agents(&fake.url, &["show", "codex", "a1"]);
    check(
        &out,
        1,
        &[
            "snapwake: snapwake's function failed without an answer (API Gateway 500 Internal \
           Server Error): report it to the operators (request Mc7UVioPPHcEKPA=)",
        ],
    );
    assert_eq!(fake.seen().len(), 1);
}

#[test]
fn an_unknown_route_points_at_the_url() {
    let fake = Fake::start(vec![gateway(404, "Not Found", &[])]);
    let out = agents(&fake.url, &["list"]);
    check(
        &out,
        1,
        &[
            "API Gateway has no such route (404 Not Found): check --url, which must include any \
           stage or base path",
        ],
    );
}

#[test]
fn a_request_over_the_gateways_limit_says_so() {
    let fake = Fake::start(vec![gateway(413, "Request Entity Too Large", &[])]);
    let out = agents(&fake.url, &["wake", "codex", "a1"]);
    check(
        &out,
        1,
        &["API Gateway refused the request as too large (413 Request Entity Too Large)"],
    );
    assert_eq!(fake.seen().len(), 1);
}

#[test]
fn snapwakes_own_problem_is_shown_by_title_code_and_detail() {
    let fake = Fake::start(vec![reply(
        404,
        &[("content-type", "application/problem+json")],
        r#"{"type":"urn:snapwake:problem:agent-not-found","title":"Agent not found",
            "status":404,"detail":"no such agent","code":"AGENT_NOT_FOUND","retryable":false,
            "request_id":"r-42"}"#,
    )]);
    let out = agents(&fake.url, &["show", "codex", "a1"]);
    check(
        &out,
        1,
        &["snapwake: Agent not found (404 AGENT_NOT_FOUND): no such agent (request r-42)"],
    );
}

#[test]
fn an_answer_of_neither_shape_is_called_unreadable_and_not_printed() {
    let fake = Fake::start(vec![reply(
        502,
        &[("content-type", "text/html")],
        "<html><title>Bad gateway</title></html>",
    )]);
    let out = agents(&fake.url, &["list"]);
    check(
        &out,
        1,
        &[
            "the API answered 502 with 39 bytes of text/html, neither snapwake's problem+json \
           nor API Gateway's {\"message\"}",
        ],
    );
    assert!(!stderr(&out).contains("Bad gateway"));
}

#[test]
fn a_wake_still_under_way_at_the_timeout_says_it_goes_on() {
    let fake = Fake::start(vec![reply(
        202,
        &[("content-type", "application/json"), ("retry-after", "1")],
        r#"{"kind":"codex","agent_id":"a1","state":"waking","resumed":false}"#,
    )]);
    let out = agents(&fake.url, &["wake", "codex", "a1", "--timeout", "1500ms"]);
    check(
        &out,
        75,
        &[
            "codex/a1 is still waking after",
            "run it again to follow it",
        ],
    );
    assert_eq!(fake.seen().len(), 2);
}

#[test]
fn without_a_token_or_over_plain_http_nothing_is_sent() {
    let out = Command::new(env!("CARGO_BIN_EXE_snapwake"))
        .args(["agents", "list", "--url", "http://127.0.0.1:9"])
        .env_remove("SNAPWAKE_TOKEN")
        .output()
        .expect("run");
    check(&out, 2, &["no token: pass --token or set SNAPWAKE_TOKEN"]);
    let out = agents("http://api.example.com", &["list"]);
    check(&out, 2, &["refusing to send the token over plain http"]);
    // --help shows the variable's name, never its value.
    let out = agents("http://127.0.0.1:9", &["list", "--help"]);
    check(&out, 0, &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("SNAPWAKE_TOKEN"));
}
