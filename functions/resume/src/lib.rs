//! `POST /v1/agents/{kind}/{agent_id}/resume`: a convergent "ensure awake".
//!
//! 200 with the agent when it is awake (`"resumed": true` when this call or a concurrent one
//! woke it, `false` when it already was); 202 with `Retry-After` and `Location` when it is still
//! waking at the end of this request's budget; 404 when the agent does not exist or is not the
//! caller's; 409 while a delete holds it; 410 once deleted; 422 when nothing can be woken.
//! The exactly-once guarantee lives in [`snapwake::wake`]; this handler authorises, reads
//! where the record says the agent lives (the caller that wins the lock locates an agent
//! the table does not place yet) and answers.

use std::time::Duration;

use lambda_http::{Body, Request, RequestExt, Response};
use serde::{Deserialize, Serialize};
use snapwake::agentkit::AgentKit;
use snapwake::config::IdentityConfig;
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, AgentRecord, AgentState, AgentView, Retention, WakeView};
use snapwake::error::{Error, Result};
use snapwake::http::request::{self as req, Route};
use snapwake::http::response;
pub use snapwake::identity::may_act;
use snapwake::identity::{describe, Caller, Place};
use snapwake::lock::AgentLock;
use snapwake::registry::RegistryCache;
use snapwake::store::{now_ms, AgentStore, Within};
use snapwake::view::{agent_view, AgentFacts};
use snapwake::wake::{home_of, Wake, WakeOutcome, WakeSettings, WakeTarget};

pub const ROUTES: [Route; 1] = [Route {
    method: "POST",
    pattern: "/v1/agents/{kind}/{agent_id}/resume",
}];

/// Time kept back from the Lambda's remaining time to answer after the wait.
const ANSWER_MARGIN: Duration = Duration::from_secs(2);
/// What a 202 suggests before asking again.
const RETRY_AFTER_S: u64 = 2;

/// The resume function's context: ports and settings built once per container.
pub struct Resume<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    pub wake: WakeSettings,
}

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
    /// Serve one request; every failure becomes a problem+json response.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        let request_id = req::request_id(&request);
        match self.resume(&request).await {
            Ok(resp) => resp,
            Err(err) => {
                match &err {
                    Error::Internal(_)
                    | Error::Store(_)
                    | Error::AgentKit(_)
                    | Error::WakeFailed(_) => {
                        tracing::warn!(request_id = request_id.as_deref().unwrap_or(""), error = %err, "resume failed")
                    }
                    _ => {
                        tracing::info!(request_id = request_id.as_deref().unwrap_or(""), error = %err, "resume refused")
                    }
                }
                err.into_response(request_id.as_deref())
            }
        }
    }

    async fn resume(&self, request: &Request) -> Result<Response<Body>> {
        let matched = req::route(&ROUTES, request.method().as_str(), req::path(request))?;
        let caller = Caller::from_request(request, &self.identity)?;
        let kind = req::parse_kind(&matched.params[0])?;
        let agent_id = req::parse_id(&matched.params[1])?;
        let body: ResumeBody = req::optional_json(request)?.unwrap_or_default();
        let snapshot_id = body.snapshot_id.as_deref().map(req::parse_id).transpose()?;
        let deadline = self.deadline(request);
        let key = AgentKey::new(kind, agent_id);

        // Every store call of the request takes its time from the request's budget.
        let record = AgentLock::new(&self.store, &self.wake.lock, deadline)
            .read(&key)
            .await?;
        if !may_act(&caller, &key, record.as_ref()) {
            return Err(Error::AgentNotFound);
        }
        let registry = self
            .registry
            .get(&Within::new(&self.store, deadline))
            .await?;
        // Where the record says the agent lives (any Tool of its kind the registry knows);
        // otherwise only the caller that wins the lock looks for it.
        let home = record.as_ref().and_then(|r| home_of(&registry, r));
        let target = WakeTarget {
            describe: describe(
                &caller,
                &key,
                record.as_ref(),
                home.as_ref().map(|h| Place {
                    tool_id: &h.tool_id,
                    region: &h.region,
                    retention: h.retention,
                }),
                None,
            ),
            key: key.clone(),
            home,
            snapshot_id,
        };
        let wake = Wake::new(&self.store, &self.agentkit, &registry, &self.wake);
        let outcome = wake.run(&target, record, deadline).await?;
        Ok(match outcome {
            WakeOutcome::Awake {
                session,
                resumed,
                record,
                snapshots,
            } => {
                tracing::info!(agent = %key, resumed, "awake");
                let view = self.view(&key, &record, std::slice::from_ref(&session), &snapshots);
                with_etag(
                    response::json(
                        200,
                        &Resumed {
                            agent: &view,
                            resumed,
                        },
                    ),
                    &record,
                )
            }
            WakeOutcome::Waking { record } => {
                tracing::info!(agent = %key, "still waking");
                // A 202 says "still waking", whatever the record's lease says by the time it
                // is built (a wake whose Resume is unaccounted for, a lease about to lapse).
                let mut view = self.view(&key, &record, &[], &[]);
                view.state = AgentState::Waking;
                view.wake = Some(WakeView {
                    state: "waking".into(),
                    since: record.updated_at.clone(),
                    session_id: record.session_id.clone(),
                    error: None,
                });
                let mut resp = with_etag(
                    response::json(
                        202,
                        &Resumed {
                            agent: &view,
                            resumed: false,
                        },
                    ),
                    &record,
                );
                let headers = resp.headers_mut();
                headers.insert(lambda_http::http::header::RETRY_AFTER, RETRY_AFTER_S.into());
                if let Ok(location) = format!("/v1/agents/{}/{}", key.kind, key.agent_id).parse() {
                    headers.insert(lambda_http::http::header::LOCATION, location);
                }
                resp
            }
        })
    }

    fn view(
        &self,
        key: &AgentKey,
        record: &AgentRecord,
        sessions: &[snapwake::agentkit::types::Session],
        snapshots: &[snapwake::agentkit::types::Snapshot],
    ) -> AgentView {
        agent_view(
            &AgentFacts {
                key,
                record: Some(record),
                sessions,
                snapshots,
                retention: record.retention.unwrap_or(Retention::Recoverable),
            },
            now_ms(),
            &self.wake.lock,
        )
    }

    /// This request's wait: the configured wait, cut to the Lambda's remaining time less a
    /// margin to answer (API Gateway gives up at 30 s).
    fn deadline(&self, request: &Request) -> Deadline {
        let mut budget = self.wake.wait;
        if let Some(ctx) = request.lambda_context_ref() {
            let remaining_ms = ctx.deadline.saturating_sub(now_ms());
            let remaining = Duration::from_millis(remaining_ms).saturating_sub(ANSWER_MARGIN);
            budget = budget.min(remaining);
        }
        Deadline::after(budget)
    }
}

fn with_etag(mut resp: Response<Body>, record: &AgentRecord) -> Response<Body> {
    if record.version > 0 {
        if let Ok(v) = record.etag().parse() {
            resp.headers_mut()
                .insert(lambda_http::http::header::ETAG, v);
        }
    }
    resp
}
