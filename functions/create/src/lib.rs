//! `POST /v1/agents`: create an agent.
//!
//! Body `{"kind", "display_name", "retention"?}`; answers 201 with the agent view, a
//! `Location: /v1/agents/{kind}/{agent_id}` header and the record's `ETag`. An optional
//! `Idempotency-Key` makes retries safe ([`idempotency`]).
//!
//! Files: `lib.rs` (this: the handler and the answer), `plan.rs` (the checked request),
//! `idempotency/` (the Idempotency-Key protocol and its document), `agent.rs` (the agent's
//! record under its lock), `session.rs` (CreateSession, its region fallback and reconcile).
//!
//! # Steps
//!
//! 1. Authenticate (401), read and check the body: malformed JSON, a field of the wrong type,
//!    an unknown field, an unknown kind or retention → 400; a display name that breaks the
//!    rules (trimmed, 1–40 characters, no control characters) → 422; over 16 KiB → 413.
//!    Unknown fields are refused rather than ignored, so a misspelt `retension` cannot quietly
//!    create an agent with the default retention.
//! 2. Resolve the Tool from the registry: the asked retention, else the kind's default
//!    (recoverable when a recoverable Tool is deployed, else temporary). A retention whose Tool
//!    is not deployed → 503 `NOT_CONFIGURED`. Legacy snapshot Tools never receive new agents.
//! 3. Mint the UserSessionId `studio-<safe_owner>-<32 hex>` (docs/identity.md); it is the agent id.
//! 4. Take the agent's lock first ([`snapwake::lock`], docs/wake-protocol.md, "Create and delete under the same lock"): the record is
//!    written as `creating` (condition: absent; owner, owner key, display name, creator,
//!    retention, Tool, region, `created_at`), so a crash after CreateSession never leaves an
//!    agent snapwake has no record of, and a delete racing the create is fenced (409) exactly
//!    like one racing a wake. A tombstone found there (a takeover of an agent deleted
//!    meanwhile) → 410 `AGENT_GONE`: nothing is created.
//! 5. `create_sent_at` in the record (fenced), then `CreateSession` in the registry's region
//!    (never with less than one AgentKit request timeout of budget left: 503 `TRY_AGAIN`
//!    instead); only `InvalidResource.NotFound` (the Tool is not in that region) moves on to
//!    the next configured region.
//! 6. `ErrCreateSessionFail`, or an ambiguous failure after the request may have reached
//!    AgentKit (transport error after sending, any 5xx, an unreadable answer) → reconcile:
//!    `ListSessions` filtered by the UserSessionId; an active session is the agent's (201).
//!    None is no proof: AgentKit may apply the CreateSession later, so the agent stays held
//!    until `create_sent_at` + [`CreateSettings::unsettled_window`] and the answer is 202
//!    (`agent.rs` module docs: nobody sends a second CreateSession inside that window). A
//!    throttle → 429 with `Retry-After`, a 4xx → 502 (AgentKit refused it, so nothing was
//!    created): the record is retired (expired at once, so it reads as absent) rather than
//!    left behind as an "unavailable" ghost.
//! 7. Record the session (fenced: session id, its expiry, the region that answered) and give
//!    the lock back as `awake`; answer with the view of the new agent (its session
//!    `starting`, or `awake` once Ready), read back with one GetSession; if that read fails,
//!    the session is shown as `Creating`, the first status of every new session.
//!

mod agent;
mod function;
mod idempotency;
mod plan;
mod session;

use lambda_http::http::header;
use lambda_http::{Body, Request, Response};
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::domain::AgentState;
use snapwake::error::Result;
use snapwake::http::edge;
use snapwake::http::edge::Route;
use snapwake::identity::{caller, Caller};
use snapwake::invocation::Deadline;
use snapwake::store::AgentStore;
use snapwake::view::{agent_view, AgentFacts};

use agent::{Created, Outcome};
pub use function::{
    Create, CreateSettings, CREATE_BUDGET, FUNCTION, STALE_RUNNING, UNSETTLED_RETRY_AFTER_S,
    UNSETTLED_WINDOW,
};
use plan::Plan;

pub const ROUTES: [Route; 1] = [Route::new("POST", "/v1/agents")];

impl<S: AgentStore, K: AgentKit> Create<S, K> {
    /// Serve one request, in its invocation's span; every failure becomes a problem+json
    /// response.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        let request_id = edge::request_id(&request);
        let served = edge::serve(&request, self.create(&request, request_id.as_deref()));
        snapwake::invocation::Invocation::http(FUNCTION)
            .run(served)
            .await
    }

    async fn create(&self, request: &Request, request_id: Option<&str>) -> Result<Response<Body>> {
        edge::route(&ROUTES, request.method().as_str(), edge::path(request))?;
        let caller = Caller::from_request(request, &self.identity)?;
        let idempotency_key = idempotency::key(request)?;
        let deadline = Deadline::for_request(request, self.settings.budget);
        let plan = self.plan(request, caller, deadline).await?;
        match idempotency_key {
            None => {
                let agent_id = caller::mint(&plan.caller.owner);
                let outcome = self.create_agent(&plan, &agent_id, false, deadline).await?;
                Ok(self.answer(&plan, &outcome))
            }
            Some(key) => {
                self.create_idempotent(&plan, &key, deadline, request_id)
                    .await
            }
        }
    }

    /// The answer of a create: 201 with the view, `Location` and `ETag`; or, while an unsettled
    /// CreateSession may still take effect, 202 with the view (`state: starting`, no session
    /// yet), `Location`, `ETag` and `Retry-After`.
    fn answer(&self, plan: &Plan, outcome: &Outcome) -> Response<Body> {
        match outcome {
            Outcome::Created(created) => self.created_response(plan, created),
            Outcome::Unsettled(record) => {
                let mut view = agent_view(
                    &AgentFacts {
                        key: &record.key,
                        record: Some(record),
                        sessions: &[],
                        snapshots: &[],
                        retention: plan.retention,
                        open_url: self.settings.open_url.as_ref(),
                    },
                    now_ms(),
                    &self.settings.lock,
                );
                // Being created: no session shows yet, and none is ruled out.
                view.state = AgentState::Starting;
                let mut resp = edge::with_etag(edge::json(202, &view), record);
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, UNSETTLED_RETRY_AFTER_S.into());
                edge::with_location(resp, &plan.prefix, &record.key)
            }
        }
    }

    /// 201 with the view, `Location` and `ETag`.
    fn created_response(&self, plan: &Plan, created: &Created) -> Response<Body> {
        let record = &created.record;
        let view = agent_view(
            &AgentFacts {
                key: &record.key,
                record: Some(record),
                sessions: std::slice::from_ref(&created.session),
                snapshots: &[],
                retention: plan.retention,
                open_url: self.settings.open_url.as_ref(),
            },
            now_ms(),
            &self.settings.lock,
        );
        let resp = edge::with_etag(edge::json(201, &view), record);
        edge::with_location(resp, &plan.prefix, &record.key)
    }
}
