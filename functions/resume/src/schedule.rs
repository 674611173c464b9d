//! `PUT|GET|DELETE /v1/agents/{kind}/{agent_id}/schedule`: when the agent should be awake and
//! when asleep (docs/schedules.md). The ticks that act on schedules are [`crate::tick`].
//!
//! Owner or admin, like a wake; 404 for an agent the caller may not act on or that snapwake
//! has no record of yet (a schedule is kept beside the agent's record); 410 once deleted.

use lambda_http::{Body, Request, Response};
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentKey, Retention, ScheduleRecord, ScheduleSummary, WakeState};
use snapwake::error::{Error, Result};
use snapwake::http::request::{self as req, Matched};
use snapwake::http::response;
use snapwake::schedule::{summary, Plan, ScheduleBody};
use snapwake::store::{AgentStore, Changes, Condition, ScheduleStore, StoreError};
use snapwake::timestamp::now_ms;

use crate::addressed::Addressed;
use crate::Resume;

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// The agent the path names, which must have a live record.
    async fn scheduled_agent(&self, request: &Request, matched: &Matched) -> Result<Addressed> {
        let named = self.named(request, matched)?;
        let addressed = self.address(request, named).await?;
        match addressed.record.as_ref().map(|r| r.state) {
            None => Err(Error::AgentNotFound),
            Some(WakeState::Gone) => Err(Error::AgentGone),
            Some(_) => Ok(addressed),
        }
    }

    pub(crate) async fn put_schedule(
        &self,
        request: &Request,
        matched: &Matched,
    ) -> Result<Response<Body>> {
        let addressed = self.scheduled_agent(request, matched).await?;
        let body: ScheduleBody = req::json(request)?;
        let plan = Plan::check(&body)?;
        let retention = addressed
            .record
            .as_ref()
            .and_then(|r| r.description.retention)
            .or(addressed.home.as_ref().map(|h| h.retention));
        if plan.sleep.is_some() && retention == Some(Retention::Temporary) {
            return Err(Error::NotSleepable(
                "sleep: a temporary agent keeps no snapshot, so it cannot be put to sleep".into(),
            ));
        }
        let mut record: ScheduleRecord = plan.record(now_ms());
        record.key = Some(addressed.key.clone());
        // A PUT replaces the schedule as a whole: the person's latest intent wins over a tick
        // that wrote in between (the occurrence it carried belonged to the old schedule).
        let mut expected = self
            .store
            .get_schedule(&addressed.key)
            .await?
            .map_or(0, |r| r.version);
        for _ in 0..3 {
            match self.store.put_schedule(&record, expected).await {
                Ok(written) => {
                    self.show_on_agent(&addressed.key, Some(plan.summary()))
                        .await?;
                    return Ok(response::json(200, &summary(&written)));
                }
                Err(StoreError::ScheduleConflict { current }) => {
                    expected = current.map_or(0, |r| r.version);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::AgentBusy {
            detail: "the schedule is being changed by someone else; try again".into(),
            retry_after_s: 1,
        })
    }

    pub(crate) async fn get_schedule(
        &self,
        request: &Request,
        matched: &Matched,
    ) -> Result<Response<Body>> {
        let addressed = self.scheduled_agent(request, matched).await?;
        match self.store.get_schedule(&addressed.key).await? {
            Some(record) => Ok(response::json(200, &summary(&record))),
            None => Err(Error::ScheduleNotFound),
        }
    }

    pub(crate) async fn delete_schedule(
        &self,
        request: &Request,
        matched: &Matched,
    ) -> Result<Response<Body>> {
        let addressed = self.scheduled_agent(request, matched).await?;
        self.store.delete_schedule(&addressed.key).await?;
        self.show_on_agent(&addressed.key, None).await?;
        Ok(response::no_content())
    }

    /// Write the schedule's summary on the agent record, which every view of the agent reads
    /// (a list page shows schedules without one more read). A CAS on the record's version,
    /// again on a lost race: it changes nothing a lock holder owns. After the schedule item:
    /// should this fail, the answer is an error, and the same PUT or DELETE again mends it.
    async fn show_on_agent(&self, key: &AgentKey, shown: Option<ScheduleSummary>) -> Result<()> {
        for _ in 0..5 {
            let Some(record) = self.store.get(key).await? else {
                return Ok(());
            };
            if record.state == WakeState::Gone || record.schedule == shown {
                return Ok(());
            }
            let changes = Changes {
                schedule: Some(shown.clone()),
                ..Changes::default()
            };
            match self
                .store
                .update(key, &Condition::Version(record.version), &changes)
                .await
            {
                Ok(_) => return Ok(()),
                Err(StoreError::ConditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::AgentBusy {
            detail: "the agent is changing too often to show its schedule; try again".into(),
            retry_after_s: 1,
        })
    }
}
