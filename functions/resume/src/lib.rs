//! The resume function: the routes that change whether an agent is awake.
//!
//! - `POST /v1/agents/{kind}/{agent_id}/resume` ([`resume`]): a convergent "ensure awake";
//! - `POST …/sleep` ([`sleep`]): snapshot the agent, then end its session;
//! - `POST …/keepalive` ([`keepalive`]): make the live session last longer.
//!
//! Each authorises the caller and reads the agent's record the same way ([`addressed`]); the
//! exactly-once guarantees live in [`snapwake::wake`] and [`snapwake::sleep`], under the one
//! per-agent lock. Every failure becomes a problem+json response here, in [`Resume::handle`].

mod addressed;
mod answer;
mod keepalive;
mod resume;
mod sleep;

use lambda_http::{Body, Request, Response};
use snapwake::agentkit::AgentKit;
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::http::request::{self as req, Route};
use snapwake::identity::IdentityConfig;
use snapwake::registry_cache::RegistryCache;
use snapwake::store::AgentStore;
use snapwake::wake::WakeSettings;

const RESUME: &str = "/v1/agents/{kind}/{agent_id}/resume";
const SLEEP: &str = "/v1/agents/{kind}/{agent_id}/sleep";
const KEEPALIVE: &str = "/v1/agents/{kind}/{agent_id}/keepalive";

pub const ROUTES: [Route; 3] = [
    Route {
        method: "POST",
        pattern: RESUME,
    },
    Route {
        method: "POST",
        pattern: SLEEP,
    },
    Route {
        method: "POST",
        pattern: KEEPALIVE,
    },
];

/// The resume function's context: ports and settings built once per container.
pub struct Resume<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    /// Wake, sleep and keepalive timings.
    pub wake: WakeSettings,
}

impl<S: AgentStore, K: AgentKit> Resume<S, K> {
    /// Serve one request, in its invocation's span; every failure becomes a problem+json
    /// response.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        edge::serve(&request, self.serve(&request)).await
    }

    async fn serve(&self, request: &Request) -> Result<Response<Body>> {
        let matched = req::route(&ROUTES, request.method().as_str(), req::path(request))?;
        match matched.pattern {
            RESUME => self.resume(request, &matched).await,
            SLEEP => self.sleep(request, &matched).await,
            KEEPALIVE => self.keepalive(request, &matched).await,
            _ => Err(Error::RouteNotFound),
        }
    }
}
