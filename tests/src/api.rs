//! Every HTTP function of snapwake over one store and one AgentKit, routed like API Gateway,
//! with settings short enough for tests.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use lambda_http::{Body, Request, Response};
use snapwake::agentkit::AgentKit;
use snapwake::locate::{RegistryCache, ToolOverrides};
use snapwake::schedule::ScheduleRules;
use snapwake::store::{AgentStore, ScheduleStore, UsageStore};
use snapwake::wake::WakeSettings;
use snapwake_create::{Create, CreateSettings};
use snapwake_delete::{Delete, DeleteSettings};
use snapwake_list::{List, ListSettings};
use snapwake_resume::Resume;

use crate::{alices_request, identity};

pub fn shared<T>(t: T) -> Arc<T> {
    Arc::new(t)
}

/// Every HTTP function of snapwake over one store and one AgentKit, each with its own context,
/// dispatched by the functions' own route tables (API Gateway's job in production).
pub struct Api<S, K> {
    pub list: List<S, K>,
    pub create: Create<S, K>,
    pub resume: Resume<S, K>,
    pub delete: Delete<S, K>,
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

    pub fn routes(self) -> &'static [snapwake::http::edge::Route] {
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
pub fn quick_wake() -> WakeSettings {
    WakeSettings {
        lock: quick_lock(Duration::from_secs(5)),
        ready_timeout: Duration::from_secs(3),
        poll_min: Duration::from_millis(20),
        poll_max: Duration::from_millis(100),
        watch_min: Duration::from_millis(20),
        watch_max: Duration::from_millis(100),
        poll_lease: Duration::from_millis(500),
        wait: Duration::from_secs(4),
        ..WakeSettings::default()
    }
}

/// Wake settings of a test that follows one wake closely: a lock of `lease`, readiness given
/// up after `ready_timeout`, callers held up to `wait`, AgentKit polled every 50–200 ms and the
/// record re-read every 25–100 ms.
pub fn wake_settings(lease: Duration, ready_timeout: Duration, wait: Duration) -> WakeSettings {
    WakeSettings {
        lock: quick_lock(lease),
        ready_timeout,
        wait,
        poll_min: Duration::from_millis(50),
        poll_max: Duration::from_millis(200),
        watch_min: Duration::from_millis(25),
        watch_max: Duration::from_millis(100),
        ..WakeSettings::default()
    }
}

/// Wait until a failed wake's or sleep's outcome is no longer the answer to everyone who asks
/// (`OUTCOME_KEPT`, docs/wake-protocol.md, "Short requests"): from then on a retry starts a new
/// attempt.
pub async fn outcome_forgotten() {
    tokio::time::sleep(snapwake::domain::failure::OUTCOME_KEPT + Duration::from_millis(100)).await;
}

/// A delete's settings with the lock of `wake`.
pub fn delete_settings(wake: &WakeSettings) -> DeleteSettings {
    DeleteSettings {
        lock: wake.lock.clone(),
        ..DeleteSettings::default()
    }
}

/// The list function over `store` and `agentkit`, with the tests' identity and `settings`.
pub fn list_fn<S, K>(store: S, agentkit: K, settings: ListSettings) -> List<S, K>
where
    S: AgentStore + ScheduleStore + UsageStore,
    K: AgentKit,
{
    List::new(
        store,
        agentkit,
        RegistryCache::new(ToolOverrides::default()),
        identity(),
        settings,
    )
}

/// List settings with `lock`, no cursor key and no open URL: what most tests list with.
pub fn list_settings(lock: snapwake::lock::LockSettings) -> ListSettings {
    ListSettings {
        lock,
        cursor_key: None,
        open_url: None,
        prices: None,
    }
}

/// The create function over `store` and `agentkit`, with the tests' identity and `settings`.
pub fn create_fn<S, K>(store: S, agentkit: K, settings: CreateSettings) -> Create<S, K> {
    Create {
        store,
        agentkit,
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        settings,
    }
}

/// The resume function over `store` and `agentkit`, with the tests' identity and `wake`.
pub fn resume_fn<S, K>(store: S, agentkit: K, wake: WakeSettings) -> Resume<S, K> {
    Resume {
        store,
        agentkit,
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        wake,
        schedules: ScheduleRules::default(),
        fanout: snapwake::fanout::Fanout::Channel(Default::default()),
    }
}

/// The delete function over `store` and `agentkit`, with the tests' identity and `settings`.
pub fn delete_fn<S, K>(store: S, agentkit: K, settings: DeleteSettings) -> Delete<S, K> {
    Delete {
        store,
        agentkit,
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        settings,
    }
}

/// An HTTP function of snapwake: it answers API Gateway requests (its own `handle`).
pub trait HttpFunction: Send + Sync {
    /// The function's answer to `request`.
    fn respond(&self, request: Request) -> impl Future<Output = Response<Body>> + Send;
}

/// [`HttpFunction`] for each of `functions`, by its own `handle`.
macro_rules! http_functions {
    ($($function:ident),* ; $bound:path) => {$(
        impl<S: AgentStore + ScheduleStore + $bound, K: AgentKit> HttpFunction for $function<S, K> {
            fn respond(&self, request: Request) -> impl Future<Output = Response<Body>> + Send {
                self.handle(request)
            }
        }
    )*};
}

http_functions!(Resume, Delete, Create; Send);
// The API answers `GET /v1/usage` too.
http_functions!(Api; UsageStore);

/// Alice's `POST /v1/agents/codex/{agent_id}/{verb}` to `function`, asked again every 100 ms
/// while the answer is 202, for at most `patience`: the last answer.
pub async fn settle_alices<F: HttpFunction>(
    function: &F,
    agent_id: &str,
    verb: &str,
    patience: Duration,
) -> (u16, serde_json::Value) {
    let until = std::time::Instant::now() + patience;
    let path = format!("/v1/agents/codex/{agent_id}/{verb}");
    loop {
        let (status, body) = crate::answer(&function.respond(alices_request("POST", &path)).await);
        if status != 202 || std::time::Instant::now() > until {
            return (status, body);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// [`settle_alices`], asked again also after an error that says it is retryable, as a client
/// does (a machine loaded by the rest of the suite makes AgentKit's simulator slow to answer):
/// for a test about what the change announces, not about that error.
pub async fn settle_alices_as_a_client<F: HttpFunction>(
    function: &F,
    agent_id: &str,
    verb: &str,
    patience: Duration,
) -> (u16, serde_json::Value) {
    let until = std::time::Instant::now() + patience;
    loop {
        let (status, body) = settle_alices(function, agent_id, verb, patience).await;
        let retryable = body["retryable"] == serde_json::Value::Bool(true);
        if !retryable || std::time::Instant::now() > until {
            return (status, body);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `request` answered by `function` in a task of its own, so that a test can race it against
/// another request, or abort it midway.
pub fn spawn_request<F: HttpFunction + 'static>(
    function: &Arc<F>,
    request: Request,
) -> tokio::task::JoinHandle<Response<Body>> {
    let function = function.clone();
    tokio::spawn(async move { function.respond(request).await })
}

impl<S, K> Api<S, K>
where
    S: AgentStore + ScheduleStore + UsageStore + Clone,
    K: AgentKit + Clone,
{
    /// All four functions over `store` and `agentkit`, with `identity` and [`quick_wake`].
    pub fn new(store: S, agentkit: K, identity: snapwake::identity::IdentityConfig) -> Self {
        let create = CreateSettings {
            budget: Duration::from_secs(5),
            ..Default::default()
        };
        Api {
            list: List::new(
                store.clone(),
                agentkit.clone(),
                RegistryCache::new(ToolOverrides::default()),
                identity.clone(),
                list_settings(quick_wake().lock),
            ),
            create: Create {
                identity: identity.clone(),
                ..create_fn(store.clone(), agentkit.clone(), create)
            },
            resume: Resume {
                identity: identity.clone(),
                ..resume_fn(store.clone(), agentkit.clone(), quick_wake())
            },
            delete: Delete {
                identity,
                ..delete_fn(store, agentkit, delete_settings(&quick_wake()))
            },
        }
    }
}

impl<S: AgentStore + ScheduleStore + UsageStore, K: AgentKit> Api<S, K> {
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
        use snapwake::http::edge as req;
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
