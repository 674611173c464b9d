//! `POST /v1/agents/{kind}/{agent_id}/resume`: a convergent "ensure awake".
//!
//! 200 with the agent when it is awake (`"resumed": true` when this call or a concurrent one
//! woke it, `false` when it already was); 202 with `Retry-After` and `Location` when it is still
//! waking at the end of this request's wait (none unless it says `Prefer: wait=<s>`; or a
//! sleep in flight has not settled yet); 404
//! when the agent does not exist or is not the caller's; 409 while a delete holds it; 410 once
//! deleted, or while its owner is being offboarded (docs/operations.md, "Offboarding"); 422
//! when nothing can be woken. The caller that wins the lock locates an agent the
//! table does not place yet.

use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentState, AgentView};
use snapwake::error::Result;
use snapwake::http::request::{self as req, Matched};
use snapwake::lock::Agents;
use snapwake::metrics::{self, Record};
use snapwake::store::AgentStore;
use snapwake::view::record_snapshots;
use snapwake::wake::{WakeOutcome, WakeTarget};

use crate::answer::{accepted, view, with_etag, with_preference};
use crate::Resume;

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
    pub(crate) async fn resume(
        &self,
        request: &Request,
        matched: &Matched,
    ) -> Result<Response<Body>> {
        let named = self.named(request, matched)?;
        let body: ResumeBody = req::optional_json(request)?.unwrap_or_default();
        let snapshot_id = body.snapshot_id.as_deref().map(req::parse_id).transpose()?;
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
        let agents = Agents::new(
            addressed.store,
            &self.agentkit,
            &addressed.registry,
            &self.wake,
        );
        let started = std::time::Instant::now();
        let applied_wait = addressed.applied_wait;
        let outcome = agents
            .wake(&target, addressed.record, addressed.budget)
            .await;
        metrics::emit(wake_record(&outcome, started.elapsed()));
        let response = match outcome? {
            WakeOutcome::Awake {
                session,
                resumed,
                record,
                snapshots,
            } => {
                tracing::info!(agent = %key, resumed, "awake");
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
fn wake_record(outcome: &Result<WakeOutcome>, took: std::time::Duration) -> Record {
    let name = match outcome {
        Ok(WakeOutcome::Awake { resumed: true, .. }) => "WakesCompleted",
        Ok(WakeOutcome::Awake { resumed: false, .. }) => "AlreadyAwake",
        Ok(WakeOutcome::Waking { .. }) => "WakesInProgress",
        Err(e) if e.status() >= 500 => "WakesFailed",
        Err(_) => "WakesRefused",
    };
    Record::of("resume")
        .count(name, 1)
        .millis("WakeLatency", took.as_millis() as u64)
}
