//! Every HTTP function of snapwake over one store and one AgentKit, routed like API Gateway,
//! with settings short enough for tests.

use std::sync::Arc;
use std::time::Duration;

use snapwake::store::AgentStore;

pub fn shared<T>(t: T) -> Arc<T> {
    Arc::new(t)
}

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

/// Wait until a failed wake's or sleep's outcome is no longer the answer to everyone who asks
/// (`OUTCOME_KEPT`, docs/wake-protocol.md, "Short requests"): from then on a retry starts a new
/// attempt.
pub async fn outcome_forgotten() {
    tokio::time::sleep(snapwake::domain::failure::OUTCOME_KEPT + Duration::from_millis(100)).await;
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
    S: AgentStore + snapwake::store::ScheduleStore + Clone,
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
                    open_url: None,
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

impl<S: AgentStore + snapwake::store::ScheduleStore, K: snapwake::agentkit::AgentKit> Api<S, K> {
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
