//! What the integration tests share: a DynamoDB Local table per test, a simulated AgentKit
//! with snapshot Tools and a registry, asleep agents, and API Gateway v2 requests built from
//! the fixture of a real event.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::retry::RetryPolicy;
use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::AgentKitClient;
use snapwake::agentkit::{AgentKitConfig, CredentialsSource};
use snapwake::domain::{Kind, KindTools, ToolRegistry};
use snapwake::identity::usid;
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::table::create_table;
use snapwake::store::AgentStore;
use snapwake_sim::{RunningSim, SeedSnapshot, SeedTool, SimConfig, Simulator};

pub const REGION: &str = "cn-beijing";

/// A fresh table on DynamoDB Local. Without `AWS_ENDPOINT_URL` this fails loudly: the
/// DynamoDB-backed tests must not pass by not running (scripts/test.sh starts it).
pub async fn dynamo_store(test: &str) -> DynamoStore {
    assert!(
        std::env::var_os("AWS_ENDPOINT_URL").is_some(),
        "AWS_ENDPOINT_URL is not set: start DynamoDB Local with \
         `eval \"$(scripts/start-dynamodb-local.sh)\"` or run scripts/test.sh"
    );
    let table = format!(
        "{}-{}",
        test.replace('_', "-"),
        uuid::Uuid::new_v4().simple()
    );
    dynamo_table(&table, true).await
}

/// The store over `table`, creating it when asked.
pub async fn dynamo_table(table: &str, create: bool) -> DynamoStore {
    let store = DynamoStore::from_env(table).await;
    if create {
        create_table(store.client(), table)
            .await
            .unwrap_or_else(|e| panic!("cannot create table {table}: {e}"));
    }
    store
}

/// The simulator, one recoverable and one temporary codex Tool, and the registry naming them.
pub struct World {
    pub sim: RunningSim,
    pub recoverable: String,
    pub temporary: String,
}

impl World {
    pub async fn start(session_ready_delay: Duration) -> World {
        let sim = Simulator::start(SimConfig {
            session_ready_delay,
            ..SimConfig::default()
        })
        .await
        .unwrap();
        let ctl = sim.control();
        let tool = |name: &str, snapshots: bool| SeedTool {
            name: name.into(),
            tool_type: "CodeEnv".into(),
            enable_snapshot: snapshots,
            ..SeedTool::default()
        };
        let recoverable = ctl.seed_tool(REGION, tool("chat-snapshot", true)).unwrap();
        let temporary = ctl
            .seed_tool(REGION, tool("chat-temporary", false))
            .unwrap();
        World {
            sim,
            recoverable,
            temporary,
        }
    }

    pub fn registry(&self) -> ToolRegistry {
        let mut r = ToolRegistry {
            region: Some(REGION.into()),
            ..ToolRegistry::default()
        };
        r.kinds.insert(
            Kind::Codex,
            KindTools {
                temporary: Some(self.temporary.clone()),
                recoverable: Some(self.recoverable.clone()),
                legacy_snapshot_tools: Vec::new(),
            },
        );
        r
    }

    /// Write the registry into `store` (deploy's job in production).
    pub async fn register<S: AgentStore>(&self, store: &S) {
        let current = store.get_registry().await.unwrap().map_or(0, |r| r.version);
        store.put_registry(&self.registry(), current).await.unwrap();
    }

    pub fn client(&self) -> AgentKitClient {
        client(&self.sim.endpoint())
    }

    /// An asleep agent of `owner`: one Ready snapshot. Answers (agent id, snapshot id).
    pub fn asleep_agent(&self, owner: &str, name: &str) -> (String, String) {
        let agent_id = usid::mint(owner);
        let snapshot = self
            .sim
            .control()
            .seed_snapshot(SeedSnapshot {
                tool_id: self.recoverable.clone(),
                user_session_id: Some(agent_id.clone()),
                session_id: Some(format!("s-old-{}", &agent_id[agent_id.len() - 8..])),
                session_metadata: vec![
                    MetadataEntry::string("Username", owner),
                    MetadataEntry::string("veadk_display_name", name),
                    MetadataEntry::string("veadk_creator_name", owner),
                ],
                ..SeedSnapshot::default()
            })
            .unwrap();
        (agent_id, snapshot)
    }
}

/// A client of the simulator at `endpoint` (quick retries).
pub fn client(endpoint: &str) -> AgentKitClient {
    let config = AgentKitConfig {
        endpoint: endpoint.to_string(),
        regions: vec![REGION.into(), "cn-shanghai".into()],
        credentials: CredentialsSource::Static(SimConfig::default().credentials),
        request_timeout: Duration::from_secs(2),
    };
    AgentKitClient::new(&config, SimConfig::default().credentials)
        .unwrap()
        .with_retry_policy(RetryPolicy {
            max_retries: 2,
            base: Duration::from_millis(20),
            max_wait: Duration::from_secs(1),
        })
}

/// Who makes a request.
#[derive(Clone, Copy, Debug)]
pub enum Who<'a> {
    /// A signed-in person with this `sub`.
    User(&'a str),
    /// A signed-in person in the `admins` group.
    Admin(&'a str),
    /// No authorizer at all.
    Nobody,
}

/// An API Gateway HTTP API (payload 2.0) request, built from the recorded JWT fixture (see
/// [`event`]).
pub fn request(
    method: &str,
    raw_path: &str,
    who: Who<'_>,
    body: Option<&str>,
) -> lambda_http::Request {
    from_event(&event(method, raw_path, who, body))
}

/// The identity configuration of the tests: the `admins` group is admin.
pub fn identity() -> snapwake::identity::IdentityConfig {
    snapwake::identity::IdentityConfig {
        admin_groups: vec!["admins".into()],
        ..Default::default()
    }
}

/// Status and JSON body of a response.
pub fn answer(resp: &lambda_http::Response<lambda_http::Body>) -> (u16, Value) {
    let body = match resp.body() {
        lambda_http::Body::Text(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        lambda_http::Body::Binary(b) => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (resp.status().as_u16(), body)
}

pub fn shared<T>(t: T) -> Arc<T> {
    Arc::new(t)
}

// ---------------------------------------------------------------------------------------------
// Create (functions/create): more kinds in the registry, and request headers.

/// Tools of the kinds beyond codex: hermes has only a temporary Tool; openclaw has a temporary
/// Tool and a legacy snapshot Tool, but no recoverable one.
pub struct MoreKinds {
    pub hermes_temporary: String,
    pub openclaw_temporary: String,
    pub openclaw_legacy: String,
}

impl World {
    /// Seed the Tools of [`MoreKinds`] in the simulator.
    pub fn seed_more_kinds(&self) -> MoreKinds {
        let ctl = self.sim.control();
        let tool = |name: &str, tool_type: &str, snapshots: bool| SeedTool {
            name: name.into(),
            tool_type: tool_type.into(),
            enable_snapshot: snapshots,
            ..SeedTool::default()
        };
        MoreKinds {
            hermes_temporary: ctl
                .seed_tool(REGION, tool("hermes-temporary", "HermesEnv", false))
                .unwrap(),
            openclaw_temporary: ctl
                .seed_tool(REGION, tool("openclaw-temporary", "ArkClawEnv", false))
                .unwrap(),
            openclaw_legacy: ctl
                .seed_tool(REGION, tool("openclaw-legacy", "ArkClawEnv", true))
                .unwrap(),
        }
    }

    /// [`World::registry`] plus the Tools of `more`.
    pub fn registry_with(&self, more: &MoreKinds) -> ToolRegistry {
        let mut r = self.registry();
        r.kinds.insert(
            Kind::Hermes,
            KindTools {
                temporary: Some(more.hermes_temporary.clone()),
                ..KindTools::default()
            },
        );
        r.kinds.insert(
            Kind::Openclaw,
            KindTools {
                temporary: Some(more.openclaw_temporary.clone()),
                recoverable: None,
                legacy_snapshot_tools: vec![more.openclaw_legacy.clone()],
            },
        );
        r
    }

    /// Write [`World::registry_with`] into `store`.
    pub async fn register_with<S: AgentStore>(&self, store: &S, more: &MoreKinds) {
        let current = store.get_registry().await.unwrap().map_or(0, |r| r.version);
        store
            .put_registry(&self.registry_with(more), current)
            .await
            .unwrap();
    }
}

/// `POST /v1/agents` by `who` with `body`, and the `Idempotency-Key` given (the JWT fixture
/// carries one; `None` removes it).
pub fn create_request(
    who: Who<'_>,
    body: &str,
    idempotency_key: Option<&str>,
) -> lambda_http::Request {
    let mut req = request("POST", "/v1/agents", who, Some(body));
    let headers = req.headers_mut();
    headers.remove("idempotency-key");
    if let Some(key) = idempotency_key {
        headers.insert("idempotency-key", key.parse().unwrap());
    }
    req
}

/// A header of a response as text.
pub fn header_of<'r>(
    resp: &'r lambda_http::Response<lambda_http::Body>,
    name: &str,
) -> Option<&'r str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

// ---------------------------------------------------------------------------------------------
// List function (branch `list`): requests with a query string.

/// [`request`] with query string parameters (as API Gateway passes them).
pub fn request_query(
    method: &str,
    raw_path: &str,
    query: &[(&str, &str)],
    who: Who<'_>,
) -> lambda_http::Request {
    use lambda_http::RequestExt;
    let map: std::collections::HashMap<String, String> = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    request(method, raw_path, who, None).with_query_string_parameters(map)
}

// ---------------------------------------------------------------------------------------------
// Delete tests: more of an agent (sessions, many snapshots), headers, and AgentKit jitter.

impl World {
    /// `count` more Ready snapshots of `owner`'s agent `agent_id`, created
    /// a second apart before now so the newest stays the one seeded last. Answers their ids.
    pub fn more_snapshots(&self, owner: &str, agent_id: &str, count: usize) -> Vec<String> {
        let base = time::OffsetDateTime::now_utc() - Duration::from_secs(3600 + count as u64);
        let seeds = (0..count)
            .map(|i| SeedSnapshot {
                tool_id: self.recoverable.clone(),
                user_session_id: Some(agent_id.to_string()),
                session_id: Some(format!("s-older-{i}")),
                created_at: Some(base + Duration::from_secs(i as u64)),
                session_metadata: vec![MetadataEntry::string("Username", owner)],
                ..SeedSnapshot::default()
            })
            .collect();
        self.sim.control().seed_snapshots(seeds).unwrap()
    }

    /// A Ready session of `agent_id` on the recoverable Tool. Answers its id.
    pub fn live_session(&self, owner: &str, agent_id: &str) -> String {
        self.sim
            .control()
            .seed_session(snapwake_sim::SeedSession {
                tool_id: self.recoverable.clone(),
                user_session_id: Some(agent_id.to_string()),
                metadata: vec![MetadataEntry::string("Username", owner)],
                ..Default::default()
            })
            .unwrap()
    }

    /// The snapshots the simulator still holds for `agent_id`.
    pub fn snapshots_of(&self, agent_id: &str) -> Vec<String> {
        self.sim
            .control()
            .snapshots()
            .into_iter()
            .filter(|s| s.user_session_id.as_deref() == Some(agent_id))
            .filter_map(|s| s.snapshot_id)
            .collect()
    }
}

/// `request` with one more header.
pub fn with_header(
    mut request: lambda_http::Request,
    name: &'static str,
    value: &str,
) -> lambda_http::Request {
    request
        .headers_mut()
        .insert(name, http::HeaderValue::from_str(value).unwrap());
    request
}

/// AgentKit in front of another that waits a random 0..`max_ms` ms before each call, so
/// racing callers interleave differently every round.
pub struct Jitter<K> {
    pub inner: K,
    pub max_ms: u64,
}

impl<K: snapwake::agentkit::AgentKit> snapwake::agentkit::AgentKit for Jitter<K> {
    async fn call<A: snapwake::agentkit::types::Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: snapwake::deadline::Deadline,
    ) -> Result<A::Output, snapwake::agentkit::AgentKitError> {
        let pause = u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * self.max_ms / 256;
        tokio::time::sleep(Duration::from_millis(pause)).await;
        self.inner.call(region, request, deadline).await
    }

    fn regions(&self) -> &[String] {
        self.inner.regions()
    }

    fn request_timeout(&self) -> std::time::Duration {
        self.inner.request_timeout()
    }
}

/// AgentKit that, the first time `action` answers, pauses the caller until released: a holder
/// caught at a chosen step, so a racing operation meets it there every time.
pub struct Gate<K> {
    pub inner: K,
    pub action: &'static str,
    pub armed: std::sync::atomic::AtomicBool,
    /// Notified when the caller is paused.
    pub reached: tokio::sync::Notify,
    /// Notify to let it go on.
    pub release: tokio::sync::Notify,
}

impl<K> Gate<K> {
    /// Pause after AgentKit answered `action` (it acted).
    pub fn after(inner: K, action: &'static str) -> Self {
        Gate {
            inner,
            action,
            armed: std::sync::atomic::AtomicBool::new(true),
            reached: tokio::sync::Notify::new(),
            release: tokio::sync::Notify::new(),
        }
    }

    /// Wait (at most 10 s) until a caller is paused at the gate.
    pub async fn reached(&self) {
        tokio::time::timeout(Duration::from_secs(10), self.reached.notified())
            .await
            .unwrap_or_else(|_| panic!("nobody reached the gate at {}", self.action));
    }
}

impl<K: snapwake::agentkit::AgentKit> snapwake::agentkit::AgentKit for Gate<K> {
    async fn call<A: snapwake::agentkit::types::Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: snapwake::deadline::Deadline,
    ) -> Result<A::Output, snapwake::agentkit::AgentKitError> {
        let out = self.inner.call(region, request, deadline).await;
        if A::NAME == self.action && self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.reached.notify_one();
            self.release.notified().await;
        }
        out
    }

    fn regions(&self) -> &[String] {
        self.inner.regions()
    }

    fn request_timeout(&self) -> std::time::Duration {
        self.inner.request_timeout()
    }
}

// ---------------------------------------------------------------------------------------------
// Security tests (branch `matrix`): every HTTP route behind one dispatcher, requests built
// from an editable event, and the problem+json shape.

/// Every HTTP function of snapwake over one store and one AgentKit, each with its own context,
/// dispatched by the functions' own route tables (API Gateway's job in production).
pub struct Api<S, K> {
    pub list: snapwake_list::List<S, K>,
    pub create: snapwake_create::Create<S, K>,
    pub resume: snapwake_resume::Resume<S, K>,
    pub delete: snapwake_delete::Delete<S, K>,
}

/// Which function serves a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    List,
    Create,
    Resume,
    Delete,
}

impl Function {
    pub const ALL: [Function; 4] = [
        Function::List,
        Function::Create,
        Function::Resume,
        Function::Delete,
    ];

    pub fn routes(self) -> &'static [snapwake::http::request::Route] {
        match self {
            Function::List => &snapwake_list::ROUTES,
            Function::Create => &snapwake_create::ROUTES,
            Function::Resume => &snapwake_resume::ROUTES,
            Function::Delete => &snapwake_delete::ROUTES,
        }
    }
}

/// A lock with a short lease and skew margin, so tests of expiry do not wait a minute.
pub fn quick_lock(lease: Duration) -> snapwake::lock::LockSettings {
    snapwake::lock::LockSettings {
        lease,
        skew_margin: Duration::from_millis(200),
        ..snapwake::lock::LockSettings::default()
    }
}

/// Short polls and leases, so a resume answers quickly on the simulator.
pub fn quick_wake() -> snapwake::wake::WakeSettings {
    snapwake::wake::WakeSettings {
        lock: quick_lock(Duration::from_secs(5)),
        ready_timeout: Duration::from_secs(3),
        poll_min: Duration::from_millis(20),
        poll_max: Duration::from_millis(100),
        watch_min: Duration::from_millis(20),
        watch_max: Duration::from_millis(100),
        poll_lease: Duration::from_millis(500),
        wait: Duration::from_secs(4),
        ..snapwake::wake::WakeSettings::default()
    }
}

/// A delete's settings with the lock of `wake`.
pub fn delete_settings(wake: &snapwake::wake::WakeSettings) -> snapwake_delete::DeleteSettings {
    snapwake_delete::DeleteSettings {
        lock: wake.lock.clone(),
        ..snapwake_delete::DeleteSettings::default()
    }
}

impl<S, K> Api<S, K>
where
    S: AgentStore + Clone,
    K: snapwake::agentkit::AgentKit + Clone,
{
    /// All four functions over `store` and `agentkit`, with `identity` and [`quick_wake`].
    pub fn new(store: S, agentkit: K, identity: snapwake::identity::IdentityConfig) -> Self {
        use snapwake::registry_cache::{RegistryCache, ToolOverrides};
        let registry = || RegistryCache::new(ToolOverrides::default());
        Api {
            list: snapwake_list::List::new(
                store.clone(),
                agentkit.clone(),
                registry(),
                identity.clone(),
                snapwake_list::ListSettings {
                    lock: quick_wake().lock,
                    cursor_key: None,
                },
            ),
            create: snapwake_create::Create {
                store: store.clone(),
                agentkit: agentkit.clone(),
                registry: registry(),
                identity: identity.clone(),
                settings: snapwake_create::CreateSettings {
                    budget: Duration::from_secs(5),
                    ..Default::default()
                },
            },
            resume: snapwake_resume::Resume {
                store: store.clone(),
                agentkit: agentkit.clone(),
                registry: registry(),
                identity: identity.clone(),
                wake: quick_wake(),
            },
            delete: snapwake_delete::Delete {
                store,
                agentkit,
                registry: registry(),
                identity,
                settings: delete_settings(&quick_wake()),
            },
        }
    }
}

impl<S: AgentStore, K: snapwake::agentkit::AgentKit> Api<S, K> {
    /// The function's own `handle`, called directly (no dispatch).
    pub async fn handle_by(
        &self,
        function: Function,
        request: lambda_http::Request,
    ) -> lambda_http::Response<lambda_http::Body> {
        match function {
            Function::List => self.list.handle(request).await,
            Function::Create => self.create.handle(request).await,
            Function::Resume => self.resume.handle(request).await,
            Function::Delete => self.delete.handle(request).await,
        }
    }

    /// Route `request` as API Gateway would: an unknown path → 404, a known path with another
    /// method → 405 with `Allow` (all functions' methods for it), else the function's `handle`.
    pub async fn handle(
        &self,
        request: lambda_http::Request,
    ) -> lambda_http::Response<lambda_http::Body> {
        use snapwake::http::request as req;
        let table: Vec<(req::Route, Function)> = Function::ALL
            .into_iter()
            .flat_map(|f| f.routes().iter().map(move |r| (*r, f)))
            .collect();
        let all: Vec<req::Route> = table.iter().map(|(r, _)| *r).collect();
        let method = request.method().as_str().to_string();
        let matched = match req::route(&all, &method, req::path(&request)) {
            Ok(m) => m,
            Err(e) => return e.into_response(req::request_id(&request).as_deref()),
        };
        let function = table
            .iter()
            .find(|(r, _)| r.pattern == matched.pattern && r.method.eq_ignore_ascii_case(&method))
            .map(|(_, f)| *f);
        match function {
            Some(f) => self.handle_by(f, request).await,
            None => {
                snapwake::Error::RouteNotFound.into_response(req::request_id(&request).as_deref())
            }
        }
    }
}

/// The API Gateway v2 event [`request`] builds, as JSON to edit before [`from_event`].
pub fn event(method: &str, raw_path: &str, who: Who<'_>, body: Option<&str>) -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/apigw/jwt-no-groups.json"
    ))
    .unwrap();
    let mut event: Value = serde_json::from_str(&text).unwrap();
    event["rawPath"] = raw_path.into();
    event["routeKey"] = format!("{method} {raw_path}").into();
    event["requestContext"]["http"]["method"] = method.into();
    event["requestContext"]["http"]["path"] = raw_path.into();
    event["requestContext"]["requestId"] = uuid::Uuid::new_v4().simple().to_string().into();
    event["body"] = body.map_or(Value::Null, Value::from);
    let headers = event["headers"].as_object_mut().unwrap();
    headers.remove("idempotency-key");
    headers.remove("content-length");
    let claims = &mut event["requestContext"]["authorizer"]["jwt"]["claims"];
    match who {
        Who::User(sub) => {
            claims["sub"] = sub.into();
            claims["preferred_username"] = sub.into();
        }
        Who::Admin(sub) => {
            claims["sub"] = sub.into();
            claims["preferred_username"] = sub.into();
            claims["cognito:groups"] = "[admins]".into();
        }
        Who::Nobody => {
            event["requestContext"]
                .as_object_mut()
                .unwrap()
                .remove("authorizer");
        }
    }
    event
}

/// The request of an (edited) [`event`].
pub fn from_event(event: &Value) -> lambda_http::Request {
    lambda_http::request::from_str(&event.to_string()).unwrap()
}

/// The request id an event carries.
pub fn request_id_of(event: &Value) -> String {
    event["requestContext"]["requestId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Why `resp` is not a well-formed problem+json answer of `status`, if it is not: the
/// `Content-Type`, `status` and `code` (upper snake case) in the body, `type`
/// `urn:snapwake:problem:<code in kebab case>`, a title, and `request_id` when one is given.
pub fn problem_fault(
    resp: &lambda_http::Response<lambda_http::Body>,
    status: u16,
    request_id: Option<&str>,
) -> Option<String> {
    let (got, body) = answer(resp);
    let content_type = header_of(resp, "content-type").unwrap_or("");
    let code = body["code"].as_str().unwrap_or("");
    let kebab = code.to_ascii_lowercase().replace('_', "-");
    let faults = [
        (got != status, format!("status {got}, want {status}")),
        (
            content_type != "application/problem+json",
            format!("Content-Type {content_type:?}"),
        ),
        (
            body["status"] != status,
            format!("body status {}", body["status"]),
        ),
        (
            code.is_empty()
                || !code
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()),
            format!("code {:?}", body["code"]),
        ),
        (
            body["type"] != format!("urn:snapwake:problem:{kebab}").as_str(),
            format!("type {}", body["type"]),
        ),
        (
            body["title"].as_str().is_none_or(str::is_empty),
            "no title".to_string(),
        ),
        (
            request_id.is_some_and(|id| body["request_id"] != id),
            format!("request_id {}", body["request_id"]),
        ),
    ];
    let wrong: Vec<String> = faults
        .into_iter()
        .filter(|(bad, _)| *bad)
        .map(|(_, why)| why)
        .collect();
    (!wrong.is_empty()).then(|| format!("{} (body {body})", wrong.join("; ")))
}

impl World {
    /// [`World::start`] with a simulator configured by `config` (its own credentials, say).
    pub async fn start_with(config: SimConfig) -> World {
        let sim = Simulator::start(config).await.unwrap();
        let ctl = sim.control();
        let tool = |name: &str, snapshots: bool| SeedTool {
            name: name.into(),
            tool_type: "CodeEnv".into(),
            enable_snapshot: snapshots,
            ..SeedTool::default()
        };
        let recoverable = ctl.seed_tool(REGION, tool("chat-snapshot", true)).unwrap();
        let temporary = ctl
            .seed_tool(REGION, tool("chat-temporary", false))
            .unwrap();
        World {
            sim,
            recoverable,
            temporary,
        }
    }
}

/// [`client`] signing with `credentials`.
pub fn client_with(
    endpoint: &str,
    credentials: snapwake::agentkit::signer::Credentials,
) -> AgentKitClient {
    let config = AgentKitConfig {
        endpoint: endpoint.to_string(),
        regions: vec![REGION.into(), "cn-shanghai".into()],
        credentials: CredentialsSource::Static(credentials.clone()),
        request_timeout: Duration::from_secs(2),
    };
    AgentKitClient::new(&config, credentials)
        .unwrap()
        .with_retry_policy(RetryPolicy {
            max_retries: 2,
            base: Duration::from_millis(20),
            max_wait: Duration::from_secs(1),
        })
}
