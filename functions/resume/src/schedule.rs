//! `PUT|GET|DELETE /v1/agents/{kind}/{agent_id}/schedule`: when the agent should be awake and
//! when asleep (docs/schedules.md). The ticks that act on schedules are [`crate::tick`].
//!
//! Owner or admin, like a wake; 404 for an agent the caller may not act on or that exists
//! nowhere; 410 once deleted, or (PUT) while its owner is being offboarded. An agent AgentKit
//! knows and snapwake has no record of yet (made outside snapwake, not yet indexed) is found
//! the way a wake finds it and indexed, as the sync would, so the schedule has a record to be
//! kept beside. A PUT keeps the rules of [`ScheduleRules`] (422 naming the field). The
//! schedule item and the summary on the agent record are written together, and every answer
//! shows the stored next occurrences, the same ones every view of the agent shows
//! (`snapwake::view::schedule_view`).

use lambda_http::Request;
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::domain::{AgentRecord, Retention, ScheduleRecord, WakeState};
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::index_sync::index_located;
use snapwake::locate::locate;
use snapwake::locate::questions::active_session;
use snapwake::schedule::{wake_lead_ms, Plan, Readiness, ScheduleBody};
use snapwake::store::update::{update, Attempt, Step, Updated};
use snapwake::store::{AgentStore, ScheduleStore, StoreError};
use snapwake::view::schedule_view;

use crate::Addressed;
use crate::Resume;
use crate::{Named, Reply};

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    pub(crate) async fn put_schedule(&self, request: &Request, named: Named) -> Reply {
        let (addressed, _) = self.admitted(request, named).await?;
        let body: ScheduleBody = edge::json_body(request)?;
        let plan = Plan::check(&body)?;
        plan.keeps(&self.schedules)?;
        let agent = self.agent(&addressed).await?;
        let retention = agent
            .description
            .retention
            .or(addressed.home.as_ref().map(|h| h.retention));
        if plan.sleep.is_some() && retention == Some(Retention::Temporary) {
            return Err(Error::NotSleepable(
                "sleep: a temporary agent keeps no snapshot, so it cannot be put to sleep".into(),
            ));
        }
        // A PUT replaces the schedule as a whole: the person's latest intent wins over a tick
        // that wrote in between (the occurrence it carried belonged to the old schedule).
        let mut schedule: ScheduleRecord = plan.record(now_ms());
        schedule.key = Some(addressed.key.clone());
        if schedule.next_wake_ms.is_some() {
            schedule.next_wake_lead_ms = self.lead_alone(&addressed).await;
        }
        let written = self.set(&addressed, agent, Some(&schedule)).await?;
        let written =
            written.ok_or_else(|| Error::Internal("the schedule was not written".into()))?;
        Ok(edge::json(200, &schedule_view(&written.summary())))
    }

    /// The lead a new wake occurrence of this agent's kind keeps: its kind's measured
    /// readiness (or, nothing measured yet, the prior) and the margin (docs/schedules.md,
    /// "Ready at the minute"). Unread, none: the tick still starts it early once it has read
    /// the readiness.
    async fn lead_alone(&self, addressed: &Addressed<'_, S>) -> Option<u64> {
        match Readiness::read(&addressed.store, addressed.key.kind).await {
            Ok(readiness) => Some(wake_lead_ms(
                readiness.p95(),
                1,
                self.schedules.wakes_per_second,
            )),
            Err(e) => {
                tracing::info!(error = %e, "readiness unread: the schedule shows no early start");
                None
            }
        }
    }

    pub(crate) async fn get_schedule(&self, request: &Request, named: Named) -> Reply {
        let addressed = self.address(request, named).await?;
        self.agent(&addressed).await?;
        match addressed.store.get_schedule(&addressed.key).await? {
            Some(record) => Ok(edge::json(200, &schedule_view(&record.summary()))),
            None => Err(Error::ScheduleNotFound),
        }
    }

    pub(crate) async fn delete_schedule(&self, request: &Request, named: Named) -> Reply {
        let addressed = self.address(request, named).await?;
        let agent = self.agent(&addressed).await?;
        self.set(&addressed, agent, None).await?;
        Ok(edge::no_content())
    }

    /// The agent a schedule is kept beside: its record, or, when the table has none, the
    /// agent found where a wake would find it and indexed (404: nowhere).
    async fn agent(&self, addressed: &Addressed<'_, S>) -> Result<AgentRecord> {
        if addressed.record.is_some() {
            return scheduled(addressed.record.clone());
        }
        let (key, deadline) = (&addressed.key, addressed.budget.work);
        let found = locate(&self.agentkit, &addressed.registry, key, deadline).await?;
        let mut found = found.ok_or(Error::AgentNotFound)?;
        // Found by its snapshots: whether it is awake too is one more question.
        if found.sessions.is_empty() {
            let live = active_session(&self.agentkit, &found.home(), key, None, deadline).await?;
            found.sessions.extend(live);
        }
        let indexed = index_located(&addressed.store, key, &found).await;
        tracing::info!(agent = %key, ?indexed, "schedule: indexed an agent the table did not know");
        match addressed.store.get(key).await? {
            Some(record) => scheduled(Some(record)),
            // The write failed and the table answered the read: try again.
            None => Err(Error::AgentBusy {
                detail: "the agent could not be recorded yet; try again".into(),
                retry_after_s: 1,
            }),
        }
    }

    /// Write `schedule` (`None`: remove it) and the summary every view of the agent reads, in
    /// one transaction ([`ScheduleStore::set_schedule`]): the item and the record never
    /// disagree. Lost to another writer of either (a lock holder, a tick), both are read again.
    async fn set(
        &self,
        addressed: &Addressed<'_, S>,
        agent: AgentRecord,
        schedule: Option<&ScheduleRecord>,
    ) -> Result<Option<ScheduleRecord>> {
        let store = &addressed.store;
        let key = &addressed.key;
        let version = |schedule: Option<ScheduleRecord>| schedule.map_or(0, |r| r.version);
        let updated = update(
            5,
            // The first round's: the agent as the caller read it.
            || async {
                let expected = version(store.get_schedule(key).await?);
                Ok::<_, Error>(Some((expected, agent.clone())))
            },
            |seen: Option<(u64, AgentRecord)>| match seen {
                Some((0, agent)) if schedule.is_none() && agent.schedule.is_none() => {
                    Step::Stop(None)
                }
                Some(seen) => Step::Write(seen),
                None => Step::Stop(None),
            },
            |(expected, agent): (u64, AgentRecord)| async move {
                match store.set_schedule(&agent, schedule, expected).await {
                    // Lost to a writer of either: both read again.
                    Err(StoreError::Contended) => {
                        let agent = scheduled(store.get(key).await?)?;
                        let expected = version(store.get_schedule(key).await?);
                        Ok(Attempt::Lost(Some(Some((expected, agent)))))
                    }
                    written => Ok(Attempt::Written(written?)),
                }
            },
        )
        .await?;
        match updated {
            Updated::Written(written) => Ok(written),
            Updated::Stopped(nothing) => Ok(nothing),
            Updated::KeptChanging => Err(Error::AgentBusy {
                detail: "the agent or its schedule is being changed by someone else; try again"
                    .into(),
                retry_after_s: 1,
            }),
        }
    }
}

/// The agent a schedule is kept beside: a live record (404 without one, 410 once deleted).
fn scheduled(record: Option<AgentRecord>) -> Result<AgentRecord> {
    match record {
        None => Err(Error::AgentNotFound),
        Some(r) if r.state == WakeState::Gone => Err(Error::AgentGone),
        Some(r) => Ok(r),
    }
}
