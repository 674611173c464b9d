//! The resume function: the routes that change whether an agent is awake.
//!
//! - `POST /v1/agents/{kind}/{agent_id}/resume` ([`Resume::resume`], below): a convergent
//!   "ensure awake";
//! - `POST …/sleep` ([`sleep`]): snapshot the agent, then end its session;
//! - `POST …/keepalive` ([`keepalive`]): make the live session last longer;
//! - `PUT|GET|DELETE …/schedule` ([`schedule`]): when the agent wakes and sleeps by itself;
//! - `POST …/activity` and `GET|PUT …/idle` ([`idle`]): idle sleep's use and setting;
//! - the schedules' tick ([`tick`]), a scheduled invocation, and the fan-out queue's batches
//!   of due occurrences it hands over ([`Invocation`] tells them apart, below).
//!
//! Each starts from [`Addressed`] (the caller, the agent, the request's bounded store, the
//! record, where it lives; a 404 for an agent the caller may not act on, a 410 while its owner
//! is offboarded) and answers with its view, `ETag`, `Retry-After` and `Location`. The
//! exactly-once guarantees live in [`snapwake::wake`] and [`snapwake::sleep`], under the one
//! per-agent lock; every failure becomes problem+json in [`Resume::handle`].

pub use crate::function::{Resume, FUNCTION};
use crate::tick::{BatchResponse, QueueBatch, TickReport};
pub(crate) use accepted::accepted;
use lambda_http::aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Context, Request, RequestExt, Response};
use serde::{Deserialize, Serialize};
use snapwake::agentkit::types::{Session, Snapshot};
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::domain::{
    AgentKey, AgentRecord, AgentState, AgentView, Description, Retention, ToolRegistry,
};
use snapwake::error::{Error, Result};
use snapwake::http::edge::{self, parse_id, Matched, Route};
use snapwake::identity::{describe, may_act, Caller, Place};
use snapwake::invocation::{self, begin_event, Budget, Deadline, Metric};
use snapwake::locate::{home_of, Home};
use snapwake::lock::Agents;
use snapwake::offboarding::{admit, Admitted};
use snapwake::store::{AgentStore, ScheduleStore, Within};
use snapwake::view::{agent_view, record_snapshots, AgentFacts};
use snapwake::wake::{WakeOutcome, WakeSettings, WakeTarget};
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

mod accepted;
mod function;
mod idle;
mod keepalive;
mod schedule;
mod sleep;
pub mod tick;

const RESUME: &str = "/v1/agents/{kind}/{agent_id}/resume";
const SLEEP: &str = "/v1/agents/{kind}/{agent_id}/sleep";
const KEEPALIVE: &str = "/v1/agents/{kind}/{agent_id}/keepalive";
const SCHEDULE: &str = "/v1/agents/{kind}/{agent_id}/schedule";
const ACTIVITY: &str = "/v1/agents/{kind}/{agent_id}/activity";
const IDLE: &str = "/v1/agents/{kind}/{agent_id}/idle";

pub const ROUTES: [Route; 9] = [
    Route::new("POST", RESUME),
    Route::new("POST", SLEEP),
    Route::new("POST", KEEPALIVE),
    Route::new("PUT", SCHEDULE),
    Route::new("GET", SCHEDULE),
    Route::new("DELETE", SCHEDULE),
    Route::new("POST", ACTIVITY),
    Route::new("PUT", IDLE),
    Route::new("GET", IDLE),
];

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// Serve one request, in its invocation's span; every failure becomes a problem+json
    /// response.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        snapwake::invocation::Invocation::http(FUNCTION)
            .run(edge::serve(&request, self.serve(&request)))
            .await
    }

    async fn serve(&self, request: &Request) -> Reply {
        let matched = edge::route(&ROUTES, request.method().as_str(), edge::path(request))?;
        // Every route names one agent: who asks and which agent are read first, once.
        let named = self.named(request, &matched)?;
        match matched.pattern {
            RESUME => self.resume(request, named).await,
            SLEEP => self.sleep(request, named).await,
            KEEPALIVE => self.keepalive(request, named).await,
            SCHEDULE => match request.method().as_str() {
                "PUT" => self.put_schedule(request, named).await,
                "GET" => self.get_schedule(request, named).await,
                _ => self.delete_schedule(request, named).await,
            },
            ACTIVITY => self.activity(request, named).await,
            IDLE => match request.method().as_str() {
                "PUT" => self.put_idle(request, named).await,
                _ => self.get_idle(request, named).await,
            },
            _ => Err(Error::RouteNotFound),
        }
    }
}

// ---- Everything that can invoke the resume function, typed as the Lambda runtime hands it
// over: an API Gateway request, the schedules' tick (docs/schedules.md) or a batch of the
// fan-out queue; one function for all (docs/architecture.md, "One way in per binary").

/// What an invocation asks for. Untagged: the tick comes first, since it is recognised by its
/// exact fields, and an API Gateway request never has them; then an SQS batch (`Records`,
/// each from `aws:sqs`).
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "an API Gateway HTTP API request, an SQS batch, or a tick: \
    {\"action\": \"tick\", \"time\": \"<RFC 3339>\"}"
)]
pub enum Invocation {
    Tick(TickEvent),
    Queue(QueueBatch),
    Http(Box<HttpEvent>),
}

/// The schedules' tick at `time`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TickEvent {
    #[allow(dead_code)] // recognises the event: `"action": "tick"`
    action: TickAction,
    /// The instant the Scheduler meant (epoch ms), never this machine's clock.
    #[serde(deserialize_with = "rfc3339_ms")]
    pub time: u64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum TickAction {
    Tick,
}

/// An API Gateway HTTP API request: one that names its route or its path (every field of the
/// payload is optional to its type, so an event that names neither is not taken for one).
#[derive(Debug, Deserialize)]
#[serde(try_from = "ApiGatewayV2httpRequest")]
pub struct HttpEvent(ApiGatewayV2httpRequest);

impl TryFrom<ApiGatewayV2httpRequest> for HttpEvent {
    type Error = &'static str;

    fn try_from(request: ApiGatewayV2httpRequest) -> Result<Self, Self::Error> {
        match (&request.route_key, &request.raw_path) {
            (None, None) => Err("not an API Gateway request: no routeKey, no rawPath"),
            _ => Ok(HttpEvent(request)),
        }
    }
}

/// What the function answers: API Gateway's response, a tick's report, or a batch's
/// messages to deliver again.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Answer {
    Http(Box<ApiGatewayV2httpResponse>),
    Tick(TickReport),
    Queue(BatchResponse),
}

fn rfc3339_ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let time = String::deserialize(d)?;
    snapwake::ambient::epoch_ms(&time)
        .ok_or_else(|| serde::de::Error::custom("the tick's time is not an RFC 3339 instant"))
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// Serve one invocation: an HTTP request's answer, or a tick's report. In the invocation's
    /// span, so every line logged for it carries Lambda's request id.
    pub async fn invoke(&self, event: Invocation, context: Context) -> Result<Answer, Error> {
        let span = begin_event(&context);
        let served = Box::pin(self.serve_invocation(event, context)).instrument(span);
        // The request and the tick each run as their own invocation (`handle`, `tick`); this
        // one only covers reading the event before either begins.
        snapwake::invocation::Invocation::http(FUNCTION)
            .run(served)
            .await
    }

    async fn serve_invocation(&self, event: Invocation, context: Context) -> Result<Answer, Error> {
        match event {
            Invocation::Http(http) => {
                let HttpEvent(request) = *http;
                let request = lambda_http::Request::from(LambdaRequest::ApiGatewayV2(request))
                    .with_lambda_context(context);
                let answered = edge::api_gateway_v2(self.handle(request).await);
                Ok(Answer::Http(Box::new(answered)))
            }
            Invocation::Tick(tick) => {
                let deadline = Deadline::for_invocation(context.deadline);
                Ok(Answer::Tick(
                    self.tick_and_consume(tick.time, deadline).await?,
                ))
            }
            Invocation::Queue(batch) => {
                let deadline = Deadline::for_invocation(context.deadline);
                Ok(Answer::Queue(self.due_batch(batch, deadline).await))
            }
        }
    }
}

// ---- `POST /v1/agents/{kind}/{agent_id}/resume`: a convergent "ensure awake". 200 with the
// agent (`"resumed"` says whether this call or a concurrent one woke it); 202 while it is still
// waking when the wait ends; 404, 409, 410, 422 as docs/http-api.md says.

/// Unknown fields are refused (400) rather than ignored: a misspelt `snapshotid` must not
/// quietly wake the newest snapshot instead of the one named.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResumeBody {
    #[serde(default)]
    snapshot_id: Option<String>,
}

/// The answer body: the agent view plus whether it was woken.
#[derive(Serialize)]
struct Resumed<'a> {
    #[serde(flatten)]
    agent: &'a AgentView,
    resumed: bool,
}

impl<S: AgentStore, K: AgentKit> Resume<S, K> {
    pub(crate) async fn resume(&self, request: &Request, named: Named) -> Reply {
        let body: ResumeBody = edge::optional_json(request)?.unwrap_or_default();
        let snapshot_id = body.snapshot_id.as_deref().map(parse_id).transpose()?;
        // An owner being offboarded gets nothing woken: their agents are on the way out.
        let (addressed, admitted) = self.admitted(request, named).await?;
        let target = WakeTarget {
            describe: addressed.describe(),
            key: addressed.key.clone(),
            home: addressed.home.clone(),
            snapshot_id,
            admitted,
        };
        let key = &addressed.key;
        let addressed_store = addressed.store;
        let agents = Agents::new(
            addressed.store,
            &self.agentkit,
            &addressed.registry,
            &self.wake,
        );
        let started = tokio::time::Instant::now();
        let applied_wait = addressed.applied_wait;
        let outcome = agents
            .wake(&target, addressed.record, addressed.budget)
            .await;
        invocation::emit(wake_metric(&outcome, started.elapsed()));
        let response = match outcome? {
            WakeOutcome::Awake {
                session,
                resumed,
                mut record,
                snapshots,
            } => {
                tracing::info!(agent = %key, resumed, "awake");
                // Asked for an agent already awake: a person is using it (docs/idle.md). Its
                // idle time moves on; a failure to write that leaves the answer as it is.
                if !resumed {
                    record = self.used(addressed_store, record).await;
                }
                // A joiner saw no listing: the record's summaries stand in (never a listing
                // per caller: a storm's AgentKit calls must not grow with its callers).
                let snapshots = if snapshots.is_empty() {
                    record_snapshots(&record)
                } else {
                    snapshots
                };
                let view = view(
                    key,
                    &record,
                    std::slice::from_ref(&session),
                    &snapshots,
                    &self.wake,
                );
                let body = Resumed {
                    agent: &view,
                    resumed,
                };
                with_etag(200, &body, &record)
            }
            WakeOutcome::Waking { record } => {
                tracing::info!(agent = %key, "still waking");
                // A 202 says "still waking", whatever the record's lease says by the time it
                // is built (a wake whose Resume is unaccounted for, a lease about to lapse).
                let mut view = view(key, &record, &[], &[], &self.wake);
                view.state = AgentState::Waking;
                view.wake = Some(snapwake::view::waking_view(&record));
                let body = Resumed {
                    agent: &view,
                    resumed: false,
                };
                accepted(&body, &record, request, self.wake.pace())
            }
        };
        Ok(with_preference(response, applied_wait))
    }
}

/// What one resume came to, for the metrics: completed (this call or a concurrent one woke
/// the agent), already awake, still waking (202), failed (a 5xx: the sandbox did not start,
/// AgentKit or the table failed), or refused (a 4xx: not found, busy, gone, nothing to wake,
/// throttled: the caller's or the moment's, not a failure to alarm on); and how long it took.
fn wake_metric(outcome: &Result<WakeOutcome>, took: std::time::Duration) -> Metric {
    let name = match outcome {
        Ok(WakeOutcome::Awake { resumed: true, .. }) => "WakesCompleted",
        Ok(WakeOutcome::Awake { resumed: false, .. }) => "AlreadyAwake",
        Ok(WakeOutcome::Waking { .. }) => "WakesInProgress",
        Err(e) if e.status() >= 500 => "WakesFailed",
        Err(_) => "WakesRefused",
    };
    Metric::of("resume")
        .count(name, 1)
        .millis("WakeLatency", took.as_millis() as u64)
}

/// An agent the caller may act on, as the table has it.
pub(crate) struct Addressed<'a, S> {
    pub caller: Caller,
    pub key: AgentKey,
    pub record: Option<AgentRecord>,
    pub registry: Arc<ToolRegistry>,
    /// Where the record says the agent lives (any Tool of its kind the registry knows).
    pub home: Option<Home>,
    /// By when the request answers, and until when it may wait (docs/wake-protocol.md, "Short
    /// requests"): no wait unless the client said `Prefer: wait`.
    pub budget: Budget,
    /// The wait a `Prefer: wait` was granted (for `Preference-Applied`); `None`: none asked.
    pub applied_wait: Option<Duration>,
    /// The table, every call bounded by the request's deadline.
    pub store: Within<'a, S>,
}

impl<S> Addressed<'_, S> {
    /// The descriptive fields an acquire writes (owner, name, Tool, ...).
    pub fn describe(&self) -> Description {
        describe(
            &self.caller,
            &self.key,
            self.record.as_ref(),
            self.home.as_ref().map(|h| Place {
                tool_id: &h.tool_id,
                region: &h.region,
                retention: h.retention,
            }),
            None,
        )
    }
}

/// What a route answers: a response, or an error the edge turns into problem+json.
pub(crate) type Reply = Result<Response<Body>>;

/// The caller and the agent the path names, before anything is read.
pub(crate) struct Named {
    caller: Caller,
    key: AgentKey,
}

impl<S: AgentStore, K: AgentKit> Resume<S, K> {
    /// Authenticate the caller and parse the path (before the body: no identity is a 401
    /// whatever the body says).
    pub(crate) fn named(&self, request: &Request, matched: &Matched) -> Result<Named> {
        let caller = Caller::from_request(request, &self.identity)?;
        let kind = edge::parse_kind(&matched.params[0])?;
        let agent_id = edge::parse_id(&matched.params[1])?;
        Ok(Named {
            caller,
            key: AgentKey::new(kind, agent_id),
        })
    }

    /// Read the record and authorise, within this request's budget.
    pub(crate) async fn address(
        &self,
        request: &Request,
        named: Named,
    ) -> Result<Addressed<'_, S>> {
        let (addressed, _) = self.read(request, named, false).await?;
        Ok(addressed)
    }

    /// [`Self::address`], for a route that would wake, put to sleep, keep alive or schedule
    /// the agent: its owner must not be being offboarded (410). Read beside the record: one
    /// more read, no more time; an unauthorised caller still learns nothing (404 first).
    pub(crate) async fn admitted(
        &self,
        request: &Request,
        named: Named,
    ) -> Result<(Addressed<'_, S>, Admitted)> {
        let (addressed, admitted) = self.read(request, named, true).await?;
        let admitted = admitted.ok_or_else(|| Error::Internal("admission not asked".into()))?;
        Ok((addressed, admitted))
    }

    async fn read(
        &self,
        request: &Request,
        named: Named,
        admitting: bool,
    ) -> Result<(Addressed<'_, S>, Option<Admitted>)> {
        let Named { caller, key } = named;
        let asked = edge::preferred_wait(request.headers());
        let wait = self.wake.wait_for(asked);
        let budget = Budget::for_request(request, wait);
        let applied_wait = asked.map(|_| wait.min(budget.work.remaining()));
        // Every store call of the request takes its time from the request's budget.
        let store = Within::new(&self.store, budget.work);
        let admission = async {
            match admitting {
                true => admit(&store, &key).await.map(Some),
                false => Ok(None),
            }
        };
        let (record, admitted) = tokio::join!(store.get(&key), admission);
        let record = record?;
        if !may_act(&caller, &key, record.as_ref()) {
            return Err(Error::AgentNotFound);
        }
        let admitted = admitted?;
        let registry = self.registry.get(&store).await?;
        let home = record.as_ref().and_then(|r| home_of(&registry, r));
        let addressed = Addressed {
            caller,
            key,
            record,
            registry,
            home,
            budget,
            applied_wait,
            store,
        };
        Ok((addressed, admitted))
    }
}

// ---- How the function's routes answer: the agent view, its `ETag`, and a 202 that says to ask
// again.

/// The view of the agent from its record and what this request saw of AgentKit.
pub(crate) fn view(
    key: &AgentKey,
    record: &AgentRecord,
    sessions: &[Session],
    snapshots: &[Snapshot],
    settings: &WakeSettings,
) -> AgentView {
    agent_view(
        &AgentFacts {
            key,
            record: Some(record),
            sessions,
            snapshots,
            retention: record
                .description
                .retention
                .unwrap_or(Retention::Recoverable),
            open_url: settings.open_url.as_ref(),
        },
        now_ms(),
        &settings.lock,
    )
}

/// `status` with `body`, and the record's version as the `ETag`.
pub(crate) fn with_etag<T: Serialize>(
    status: u16,
    body: &T,
    record: &AgentRecord,
) -> Response<Body> {
    edge::with_etag(edge::json(status, body), record)
}

/// `response` saying which `Prefer: wait` it applied, when the request asked for one.
pub(crate) fn with_preference(
    mut response: Response<Body>,
    applied_wait: Option<Duration>,
) -> Response<Body> {
    if let Some(wait) = applied_wait {
        if let Ok(value) = edge::preference_applied(wait).parse() {
            response.headers_mut().insert("preference-applied", value);
        }
    }
    response
}
