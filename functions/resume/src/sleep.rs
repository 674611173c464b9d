//! `POST /v1/agents/{kind}/{agent_id}/sleep`: put an awake agent to sleep now.
//!
//! 200 with the agent asleep (`"slept": true` when this call or a concurrent one ended its
//! session, `false` when it had none); 202 with `Retry-After` and `Location` while the
//! snapshot is still being made at the end of this request's wait (short unless the client
//! says `Prefer: wait=<s>`; the next call carries on); 404 not found or not the caller's; 409 while a wake, a create or a delete holds the
//! agent; 410 once deleted; 422 `NOT_SLEEPABLE` for a temporary agent; 502 (retryable) when
//! the snapshot failed — the session is then untouched and the agent still awake. The
//! protocol lives in [`snapwake::sleep`].

use lambda_http::Request;
use serde::{Deserialize, Serialize};
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentState, AgentView, Retention, WakeView};
use snapwake::error::Error;
use snapwake::http::edge::{self};
use snapwake::lock::Agents;
use snapwake::sleep::{SleepOutcome, SleepTarget};
use snapwake::store::AgentStore;
use snapwake::view::record_snapshots;

use crate::Resume;
use crate::{accepted, view, with_etag, with_preference};
use crate::{Named, Reply};

/// No fields yet; anything sent is refused (400) rather than silently ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SleepBody {}

/// The answer body: the agent view plus whether this sleep ended a session.
#[derive(Serialize)]
struct Slept<'a> {
    #[serde(flatten)]
    agent: &'a AgentView,
    slept: bool,
}

impl<S: AgentStore, K: AgentKit> Resume<S, K> {
    pub(crate) async fn sleep(&self, request: &Request, named: Named) -> Reply {
        let _: Option<SleepBody> = edge::optional_json(request)?;
        let (addressed, admitted) = self.admitted(request, named).await?;
        // A temporary agent keeps no snapshot: refused before anything is locked.
        if addressed
            .home
            .as_ref()
            .is_some_and(|h| h.retention == Retention::Temporary)
        {
            return Err(Error::NotSleepable(
                "a temporary agent keeps no snapshot: it cannot be put to sleep, only deleted"
                    .into(),
            ));
        }
        let target = SleepTarget {
            describe: addressed.describe(),
            key: addressed.key.clone(),
            home: addressed.home.clone(),
            admitted,
            idle_by_ms: None,
        };
        let key = &addressed.key;
        let applied_wait = addressed.applied_wait;
        let agents = Agents::new(
            addressed.store,
            &self.agentkit,
            &addressed.registry,
            &self.wake,
        );
        let outcome = agents
            .sleep(&target, addressed.record, addressed.budget)
            .await?;
        let response = match outcome {
            SleepOutcome::Asleep { record, slept, .. } => {
                tracing::info!(agent = %key, slept, "asleep");
                // The record's summaries: a sleep puts its snapshot first, and a holder that
                // found the agent asleep already wrote what it listed.
                let view = view(key, &record, &[], &record_snapshots(&record), &self.wake);
                with_etag(
                    200,
                    &Slept {
                        agent: &view,
                        slept,
                    },
                    &record,
                )
            }
            SleepOutcome::Sleeping { record } => {
                tracing::info!(agent = %key, "still sleeping");
                let mut view = view(key, &record, &[], &record_snapshots(&record), &self.wake);
                view.state = AgentState::Sleeping;
                view.wake = Some(WakeView::in_flight(
                    "sleeping",
                    record.updated_at.clone(),
                    record.session_id.clone(),
                ));
                accepted(
                    &Slept {
                        agent: &view,
                        slept: false,
                    },
                    &record,
                    request,
                    self.wake.pace(),
                )
            }
        };
        Ok(with_preference(response, applied_wait))
    }
}
