//! A fake Lambda Runtime API, so a test can run a handler inside the real `lambda_runtime` loop —
//! the code that receives, logs and answers events in a deployed function — and hand it API
//! Gateway events one at a time. The same protocol `scripts/cold_start.py` speaks: `next`
//! long-polls for an event, `response` or `error` answers it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::{get, post};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// How long an invocation may take before the test gives up on it.
const INVOCATION_BUDGET: Duration = Duration::from_secs(60);

#[derive(Clone)]
struct Shared {
    events: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<(String, Value)>>>,
    answers: Arc<Mutex<HashMap<String, oneshot::Sender<Answer>>>>,
    /// When the first `next` of the current function process arrived (cold start).
    first_next: Arc<Mutex<Option<Instant>>>,
}

/// What the function posted back for one event.
#[derive(Debug)]
pub enum Answer {
    /// `…/response`: the handler's answer (for an HTTP function, the API Gateway response).
    Response(Value),
    /// `…/error`: the function failed the invocation.
    Error(Value),
}

/// A running fake Runtime API on loopback.
pub struct RuntimeApi {
    addr: SocketAddr,
    queue: mpsc::UnboundedSender<(String, Value)>,
    shared: Shared,
}

impl RuntimeApi {
    pub async fn start() -> RuntimeApi {
        let (queue, events) = mpsc::unbounded_channel();
        let shared = Shared {
            events: Arc::new(tokio::sync::Mutex::new(events)),
            answers: Arc::new(Mutex::new(HashMap::new())),
            first_next: Arc::new(Mutex::new(None)),
        };
        let app = axum::Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(respond),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(fail))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake Runtime API");
        let addr = listener.local_addr().expect("its address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        RuntimeApi {
            addr,
            queue,
            shared,
        }
    }

    /// `host:port`, as `AWS_LAMBDA_RUNTIME_API` wants it.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// The environment `lambda_runtime` reads at start, pointing at this API.
    pub fn environment(&self, function_name: &str) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_LAMBDA_RUNTIME_API", self.address()),
            ("AWS_LAMBDA_FUNCTION_NAME", function_name.to_string()),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256".into()),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
            ("AWS_LAMBDA_LOG_STREAM_NAME", "test-stream".into()),
            (
                "AWS_LAMBDA_LOG_GROUP_NAME",
                format!("/aws/lambda/{function_name}"),
            ),
        ]
    }

    /// When the first `next` arrived since the last [`RuntimeApi::forget_next`].
    pub fn first_next(&self) -> Option<Instant> {
        *self.shared.first_next.lock().expect("first next")
    }

    /// Start timing a new function process.
    pub fn forget_next(&self) {
        *self.shared.first_next.lock().expect("first next") = None;
    }

    /// Hand `event` to the function and wait for its answer.
    pub async fn invoke(&self, event: &Value) -> Answer {
        self.invoke_as(&uuid::Uuid::new_v4().to_string(), event)
            .await
    }

    /// [`RuntimeApi::invoke`] with the Lambda request id `id` (a test that looks for it).
    pub async fn invoke_as(&self, id: &str, event: &Value) -> Answer {
        let (tx, rx) = oneshot::channel();
        self.shared
            .answers
            .lock()
            .expect("answers")
            .insert(id.to_string(), tx);
        self.queue
            .send((id.to_string(), event.clone()))
            .expect("the API is running");
        tokio::time::timeout(INVOCATION_BUDGET, rx)
            .await
            .expect("the function answers within its budget")
            .expect("an answer")
    }
}

async fn next(State(shared): State<Shared>) -> (HeaderMap, String) {
    shared
        .first_next
        .lock()
        .expect("first next")
        .get_or_insert_with(Instant::now);
    let Some((id, event)) = shared.events.lock().await.recv().await else {
        // The test is over: the function waits for an event that never comes, as in Lambda.
        return std::future::pending().await;
    };
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        + Duration::from_secs(29);
    let mut headers = HeaderMap::new();
    let mut put = |name: &'static str, value: String| {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(name, v);
        }
    };
    put("lambda-runtime-aws-request-id", id);
    put(
        "lambda-runtime-deadline-ms",
        deadline.as_millis().to_string(),
    );
    put(
        "lambda-runtime-invoked-function-arn",
        "arn:aws:lambda:us-east-1:123456789012:function:test".into(),
    );
    put(
        "lambda-runtime-trace-id",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1".into(),
    );
    (headers, event.to_string())
}

fn deliver(shared: &Shared, id: &str, answer: Answer) -> StatusCode {
    match shared.answers.lock().expect("answers").remove(id) {
        Some(tx) => {
            let _ = tx.send(answer);
            StatusCode::ACCEPTED
        }
        None => StatusCode::BAD_REQUEST,
    }
}

async fn respond(State(shared): State<Shared>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    deliver(&shared, &id, Answer::Response(value))
}

async fn fail(State(shared): State<Shared>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    deliver(&shared, &id, Answer::Error(value))
}

async fn init_error(body: Bytes) -> StatusCode {
    // The invocations that follow time out; this says why.
    eprintln!(
        "the function failed to start: {}",
        String::from_utf8_lossy(&body)
    );
    StatusCode::ACCEPTED
}

/// Serve `function` through the real Lambda runtime loop (`lambda_http::run`), as deployed,
/// against the Runtime API the environment names. The loop's future is not `Send`, so it gets
/// a thread of its own, which ends with the process.
pub fn serve_in_lambda_loop<F: crate::HttpFunction + 'static>(function: Arc<F>) {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the Lambda loop");
        rt.block_on(lambda_http::run(lambda_http::service_fn(
            move |request: lambda_http::Request| {
                let function = function.clone();
                async move { Ok::<_, std::convert::Infallible>(function.respond(request).await) }
            },
        )))
    });
}
