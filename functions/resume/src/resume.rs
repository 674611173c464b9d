//! `POST /v1/agents/{kind}/{agent_id}/resume`: a convergent "ensure awake". 200 with the agent
//! (`"resumed"` says whether this call or a concurrent one woke it); 202 while it is still
//! waking when the wait ends; 404, 409, 410, 422 as docs/http-api.md says. The protocol lives in
//! [`snapwake::wake`].

use lambda_http::Request;
use serde::{Deserialize, Serialize};
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentState, AgentView};
use snapwake::error::Result;
use snapwake::http::edge::{self, parse_id};
use snapwake::invocation::{self, Metric};
use snapwake::lock::Agents;
use snapwake::store::AgentStore;
use snapwake::view::record_snapshots;
use snapwake::wake::{WakeOutcome, WakeTarget};

use crate::{accepted, view, with_etag, with_preference};
use crate::{Named, Reply, Resume};

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
                    match self.touch(addressed_store, record.clone()).await {
                        Ok(Some(written)) => record = written,
                        Ok(None) => {}
                        Err(e) => tracing::info!(agent = %key, error = %e, "activity not recorded"),
                    }
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
