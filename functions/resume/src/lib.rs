//! The resume function: the routes that change whether an agent is awake.
//!
//! - `POST /v1/agents/{kind}/{agent_id}/resume` ([`resume`]): a convergent "ensure awake";
//! - `POST …/sleep` ([`sleep`]): snapshot the agent, then end its session;
//! - `POST …/keepalive` ([`keepalive`]): make the live session last longer;
//! - `PUT|GET|DELETE …/schedule` ([`schedule`]): when the agent wakes and sleeps by itself;
//! - the schedules' tick ([`tick`]), a scheduled invocation, and the fan-out queue's batches
//!   of due occurrences it hands over ([`invocation`] tells them apart).
//!
//! Each authorises the caller and reads the agent's record the same way ([`addressed`]); the
//! exactly-once guarantees live in [`snapwake::wake`] and [`snapwake::sleep`], under the one
//! per-agent lock. Every failure becomes a problem+json response here, in [`Resume::handle`].

mod addressed;
mod answer;
pub mod invocation;
mod keepalive;
mod resume;
mod schedule;
mod sleep;
pub mod tick;

use lambda_http::{Body, Request, Response};
use snapwake::agentkit::AgentKit;
use snapwake::error::{Error, Result};
use snapwake::fanout::Fanout;
use snapwake::http::edge;
use snapwake::http::request::{self as req, Route};
use snapwake::identity::IdentityConfig;
use snapwake::registry_cache::RegistryCache;
use snapwake::schedule::{Measured, ScheduleRules};
use snapwake::store::{AgentStore, ScheduleStore};
use snapwake::wake::WakeSettings;

const RESUME: &str = "/v1/agents/{kind}/{agent_id}/resume";
const SLEEP: &str = "/v1/agents/{kind}/{agent_id}/sleep";
const KEEPALIVE: &str = "/v1/agents/{kind}/{agent_id}/keepalive";
const SCHEDULE: &str = "/v1/agents/{kind}/{agent_id}/schedule";

pub const ROUTES: [Route; 6] = [
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
    Route {
        method: "PUT",
        pattern: SCHEDULE,
    },
    Route {
        method: "GET",
        pattern: SCHEDULE,
    },
    Route {
        method: "DELETE",
        pattern: SCHEDULE,
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
    /// What a schedule may ask for.
    pub schedules: ScheduleRules,
    /// Where the tick hands due occurrences.
    pub fanout: Fanout,
    /// Readinesses this container's consumers measured, not yet kept.
    pub measured: Measured,
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
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
            SCHEDULE => match request.method().as_str() {
                "PUT" => self.put_schedule(request, &matched).await,
                "GET" => self.get_schedule(request, &matched).await,
                _ => self.delete_schedule(request, &matched).await,
            },
            _ => Err(Error::RouteNotFound),
        }
    }
}
