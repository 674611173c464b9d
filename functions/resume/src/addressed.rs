//! What every route of the function starts from: the caller, the agent it names, the request's
//! store (bounded by its deadline, built once here and passed down), the agent's record (a
//! consistent read), the Tool registry and where the record says the agent lives. An agent
//! the caller may not act on is a 404, exactly like one that does not exist; one whose owner
//! is being offboarded, a 410 for the routes that would change it. And what every route
//! answers with: the agent's view, its `ETag`, a 202's `Retry-After` and `Location`.

use std::sync::Arc;
use std::time::Duration;

use lambda_http::http::header;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use snapwake::agentkit::types::{Session, Snapshot};
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentKey, AgentRecord, AgentView, Description, Retention, ToolRegistry};
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::http::edge::{self as req, Matched};
use snapwake::identity::{describe, may_act, Caller, Place};
use snapwake::invocation::{Budget, Deadline, Pace};
use snapwake::locate::snapshots;
use snapwake::locate::{home_of, Home};
use snapwake::offboarding::{admit, Admitted};
use snapwake::store::{AgentStore, Within};
use snapwake::timestamp::now_ms;
use snapwake::view::{agent_view, record_snapshots, AgentFacts};
use snapwake::wake::WakeSettings;

use crate::Resume;

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
        let kind = req::parse_kind(&matched.params[0])?;
        let agent_id = req::parse_id(&matched.params[1])?;
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
        let asked = req::preferred_wait(request.headers());
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

/// A 202: still at work; ask again after `Retry-After`, or read the agent at `Location`.
/// `Retry-After` is the pause a poller keeps between two questions to AgentKit about this
/// work (one second at first, longer once it has taken a while): a client that honours it
/// sees the 200 within about one pause of the work being done (docs/wake-protocol.md, "Short
/// requests").
pub(crate) fn accepted<T: Serialize>(
    body: &T,
    record: &AgentRecord,
    request: &Request,
    pace: Pace,
) -> Response<Body> {
    let mut resp = edge::with_location(
        with_etag(202, body, record),
        &req::prefix(request),
        &record.key,
    );
    let retry_after_s = pace.retry_after_s(record.awaited_since_ms, now_ms());
    resp.headers_mut()
        .insert(header::RETRY_AFTER, retry_after_s.into());
    resp
}

/// `response` saying which `Prefer: wait` it applied, when the request asked for one.
pub(crate) fn with_preference(
    mut response: Response<Body>,
    applied_wait: Option<Duration>,
) -> Response<Body> {
    if let Some(wait) = applied_wait {
        if let Ok(value) = req::preference_applied(wait).parse() {
            response.headers_mut().insert("preference-applied", value);
        }
    }
    response
}

impl<S: AgentStore, K: AgentKit> Resume<S, K> {
    /// The agent's snapshots for a single caller's answer (a keepalive): the record's
    /// summaries (kept current by every wake, sleep and sweep), or when it has none yet, a
    /// listing of the agent's Tool. Never for the answers of a storm's joiners.
    pub(crate) async fn snapshots_for(
        &self,
        record: &AgentRecord,
        home: Option<&Home>,
        deadline: Deadline,
    ) -> Vec<Snapshot> {
        if !record.snapshots.is_empty() {
            return record_snapshots(record);
        }
        let Some(home) = home else {
            return Vec::new();
        };
        snapshots(&self.agentkit, home, &record.key, deadline)
            .await
            .unwrap_or_else(|e| {
                tracing::info!(agent = %record.key, error = %e, "could not list the agent's snapshots for the answer");
                Vec::new()
            })
    }
}
