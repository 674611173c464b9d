//! A fault proxy on the wire between snapwake and DynamoDB Local: the store's own SDK client
//! talks to it as to DynamoDB, and it forwards each request, unless a scripted fault decides
//! otherwise. Faults break the HTTP exchange itself, not the store trait, so the SDK's own
//! retries, timeouts and error mapping are part of what is tested.
//!
//! A [`WireFault`] matches by operation (`X-Amz-Target`, e.g. `UpdateItem`) and by the prefix
//! of the item's `pk` (`AGENT#`, `IDEM#`, `SWEEP`, …), and fires on the next *n* matching
//! requests, at a rate (a seeded RNG, so a run is repeatable for one seed and one order of
//! requests), or always. What it does ([`Break`]):
//!
//! - `FailBefore`: never reaches the store; DynamoDB's 500 `InternalServerError`.
//! - `Throttle`: never reaches the store; 400 `ThrottlingException`.
//! - `Delay(ms)`: reaches the store that much later.
//! - `LandAndLose`: reaches the store (the write lands), then the answer is replaced by a 500:
//!   the client cannot know the write happened.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;
use snapwake::store::dynamo::DynamoStore;

/// What a fault does to the request it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Break {
    /// Let it through untouched (not counted as a fault): with [`WireFault::next`], a way to
    /// skip the first *n* matching requests before the next fault in the script fires.
    Pass,
    FailBefore,
    Throttle,
    Delay(u64),
    LandAndLose,
}

/// When a fault fires.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum When {
    /// The next `n` matching requests.
    Next(u32),
    /// Each matching request with this probability.
    Rate(f64),
    Always,
}

/// One scripted fault.
#[derive(Clone, Debug)]
pub struct WireFault {
    /// `UpdateItem`, `GetItem`, `PutItem`, `Query`, …; `None`: any operation.
    pub operation: Option<&'static str>,
    /// The start of the item's `pk`; `None`: any item (and requests with no key).
    pub key_prefix: Option<String>,
    pub fault: Break,
    pub when: When,
}

impl WireFault {
    pub fn new(operation: Option<&'static str>, key_prefix: Option<&str>, fault: Break) -> Self {
        WireFault {
            operation,
            key_prefix: key_prefix.map(str::to_string),
            fault,
            when: When::Always,
        }
    }

    pub fn next(mut self, n: u32) -> Self {
        self.when = When::Next(n);
        self
    }

    pub fn rate(mut self, p: f64) -> Self {
        self.when = When::Rate(p);
        self
    }
}

#[derive(Default)]
struct Script {
    faults: Vec<WireFault>,
    fired: std::collections::BTreeMap<String, u64>,
    forwarded: u64,
    rng: Option<fastrand::Rng>,
}

struct Shared {
    upstream: String,
    http: reqwest::Client,
    script: Mutex<Script>,
}

/// The proxy; stops when dropped.
pub struct WireProxy {
    shared: Arc<Shared>,
    address: String,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for WireProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl WireProxy {
    /// A proxy on 127.0.0.1 in front of `upstream` (DynamoDB Local's URL); `seed` drives its
    /// rate faults.
    pub async fn start(upstream: &str, seed: u64) -> WireProxy {
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(64)
                .build()
                .expect("an HTTP client"),
            script: Mutex::new(Script {
                rng: Some(fastrand::Rng::with_seed(seed)),
                ..Script::default()
            }),
        });
        let app = Router::new().fallback(relay).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = format!("http://{}", listener.local_addr().expect("an address"));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        WireProxy {
            shared,
            address,
            server,
        }
    }

    /// A proxy in front of the DynamoDB Local the tests use (`AWS_ENDPOINT_URL`).
    pub async fn in_front_of_local(seed: u64) -> WireProxy {
        let upstream = std::env::var("AWS_ENDPOINT_URL").expect(
            "AWS_ENDPOINT_URL is not set: start DynamoDB Local (scripts/start-dynamodb-local.sh)",
        );
        WireProxy::start(&upstream, seed).await
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// A store over `table` whose SDK client talks through this proxy (the production client's
    /// timeouts and retries).
    pub async fn store(&self, table: &str) -> DynamoStore {
        let loader = snapwake::store::dynamo::sdk_defaults().endpoint_url(&self.address);
        DynamoStore::from_loader(loader, table).await
    }

    pub fn add(&self, fault: WireFault) {
        self.lock().faults.push(fault);
    }

    /// No faults from now on (a healthy store).
    pub fn clear(&self) {
        self.lock().faults.clear();
    }

    /// How many faults fired, by kind (`FailBefore`, `Throttle`, `Delay`, `LandAndLose`).
    pub fn fired(&self) -> std::collections::BTreeMap<String, u64> {
        self.lock().fired.clone()
    }

    pub fn fired_total(&self) -> u64 {
        self.lock().fired.values().sum()
    }

    /// Requests that reached DynamoDB Local.
    pub fn forwarded(&self) -> u64 {
        self.lock().forwarded
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.shared.script.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The operation and `pk` of a request.
fn what(headers: &HeaderMap, body: &[u8]) -> (String, Option<String>) {
    let operation = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or_default()
        .to_string();
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let pk = json
        .pointer("/Key/pk/S")
        .or_else(|| json.pointer("/Item/pk/S"))
        .or_else(|| json.pointer("/ExpressionAttributeValues/:pk/S"))
        .and_then(Value::as_str)
        .map(str::to_string);
    (operation, pk)
}

impl Script {
    fn decide(&mut self, operation: &str, pk: Option<&str>) -> Option<Break> {
        let mut rng = self.rng.take().unwrap_or_default();
        let mut chosen = None;
        for f in self.faults.iter_mut() {
            if f.operation.is_some_and(|o| o != operation) {
                continue;
            }
            if let Some(prefix) = &f.key_prefix {
                if !pk.is_some_and(|k| k.starts_with(prefix.as_str())) {
                    continue;
                }
            }
            let fires = match &mut f.when {
                When::Next(0) => false,
                When::Next(n) => {
                    *n -= 1;
                    true
                }
                When::Rate(p) => rng.f64() < *p,
                When::Always => true,
            };
            if fires {
                chosen = Some(f.fault);
                break;
            }
        }
        self.rng = Some(rng);
        self.faults.retain(|f| f.when != When::Next(0));
        if let Some(b) = chosen.filter(|b| *b != Break::Pass) {
            let name = match b {
                Break::Pass => "Pass",
                Break::FailBefore => "FailBefore",
                Break::Throttle => "Throttle",
                Break::Delay(_) => "Delay",
                Break::LandAndLose => "LandAndLose",
            };
            *self.fired.entry(name.to_string()).or_insert(0) += 1;
        }
        chosen
    }
}

fn dynamodb_error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = serde_json::json!({
        "__type": format!("com.amazonaws.dynamodb.v20120810#{kind}"),
        "message": message,
    });
    (
        status,
        [("content-type", "application/x-amz-json-1.0")],
        body.to_string(),
    )
        .into_response()
}

async fn relay(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let (operation, pk) = what(&headers, &body);
    let decided = shared
        .script
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .decide(&operation, pk.as_deref());
    match decided {
        Some(Break::FailBefore) => {
            return dynamodb_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalServerError",
                "injected: the request never reached the store",
            )
        }
        Some(Break::Throttle) => {
            return dynamodb_error(
                StatusCode::BAD_REQUEST,
                "ThrottlingException",
                "injected: rate exceeded",
            )
        }
        Some(Break::Delay(ms)) => tokio::time::sleep(Duration::from_millis(ms)).await,
        _ => {}
    }
    let mut request = shared.http.post(format!("{}/", shared.upstream));
    for (name, value) in headers.iter() {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    let answer = match request.body(body).send().await {
        Ok(a) => a,
        Err(_) => {
            return dynamodb_error(
                StatusCode::BAD_GATEWAY,
                "InternalServerError",
                "the proxy could not reach DynamoDB Local",
            )
        }
    };
    shared
        .script
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .forwarded += 1;
    let status = answer.status();
    let content_type = answer.headers().get("content-type").cloned();
    let bytes = answer.bytes().await.unwrap_or_default();
    if decided == Some(Break::LandAndLose) {
        return dynamodb_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "injected: the answer was lost",
        );
    }
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::OK);
    if let Some(ct) = content_type {
        if let Ok(v) = axum::http::HeaderValue::from_bytes(ct.as_bytes()) {
            response.headers_mut().insert("content-type", v);
        }
    }
    response
}
