//! Idle sleep (docs/idle.md): the awake agents the tick finds idle in the `by_due` index's idle
//! partition, and what the queue's consumer does with each.
//!
//! The tick reads the agents whose idle time has come (never a scan) and hands each to the same
//! queue as scheduled occurrences. The consumer reads the record and puts the agent to sleep
//! through the per-agent lock, as a person's sleep would, announced with trigger `idle` —
//! unless, as of the record, it was used since, a change holds it, or it is inside its
//! schedule's awake window (then it is idle again when the window ends). The lock is taken
//! only while the record still shows the agent idle ([`snapwake::sleep::SleepTarget`]'s
//! `idle_by_ms`), so activity written between this read and the lock keeps it awake.

use snapwake::agentkit::AgentKit;
use snapwake::domain::idle::awake_window_ends;
use snapwake::domain::{Action, AgentRecord, Trigger, WakeState};
use snapwake::error::Error;
use snapwake::fanout::DueOccurrence;
use snapwake::invocation::{Deadline, Invocation};
use snapwake::offboarding::admit;
use snapwake::store::{
    AgentStore, Changes, Condition, DueQuery, ScheduleStore, StoreError, Within,
};

use super::act::{Acted, FOLLOW_UP_AT_LEAST};
use super::handled::Handled;
use crate::Resume;

/// Idle agents read per index query.
const PAGE: u32 = 100;

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// The first `most` awake agents idle by `time_ms` (the tick's time), longest idle first,
    /// as messages for the queue.
    pub(super) async fn idle_by(
        &self,
        store: Within<'_, S>,
        time_ms: u64,
        most: usize,
        deadline: Deadline,
    ) -> Result<Vec<DueOccurrence>, Error> {
        let mut page = store.idle_agents(DueQuery::until(time_ms, PAGE)).await?;
        let mut idle = Vec::new();
        loop {
            let found = page.records.iter().take(most.saturating_sub(idle.len()));
            idle.extend(found.map(|record| DueOccurrence::idle(record, time_ms)));
            let more = idle.len() < most && !deadline.is_past();
            let Some(next) = page.next.filter(|_| more) else {
                return Ok(idle);
            };
            let after = DueQuery {
                after: Some(&next),
                ..DueQuery::until(time_ms, PAGE)
            };
            page = store.idle_agents(after).await?;
        }
    }

    /// One idle agent from the queue, as of its tick's time: its state changes are announced
    /// as idle sleep's.
    pub(super) async fn idle_due(
        &self,
        due: &DueOccurrence,
        deadline: Deadline,
    ) -> Result<Handled, Error> {
        Invocation::background(crate::FUNCTION, Trigger::Idle)
            .run(self.idle_at(due, deadline))
            .await
    }

    async fn idle_at(&self, due: &DueOccurrence, deadline: Deadline) -> Result<Handled, Error> {
        let store = Within::new(&self.store, deadline);
        let now_ms = due.tick_ms;
        let Some(agent) = store.get(&due.agent).await? else {
            return Ok(Handled::Gone);
        };
        match agent.state {
            // A sleep in flight (this one's, or a person's): driven on below, joined.
            WakeState::Sleeping => {}
            WakeState::Awake if agent.idle_at_ms.is_some_and(|at| at <= now_ms) => {
                if let Some(end) = awake_window_ends(agent.schedule.as_ref(), now_ms) {
                    return self.idle_after_window(store, &agent, end).await;
                }
            }
            // Used since the tick read the index, or not awake: nothing to do.
            _ => return Ok(Handled::Idle),
        }
        let admitted = match admit(&store, &due.agent).await {
            Ok(admitted) => admitted,
            // Offboarding ends the owner's agents itself.
            Err(Error::AgentGone) => return Ok(Handled::Gone),
            Err(e) => return Err(e),
        };
        let registry = self.registry.get(&store).await?;
        let acted = self
            .act(
                store,
                Action::Sleep,
                &due.agent,
                agent,
                &registry,
                admitted,
                Some(now_ms),
            )
            .await;
        Ok(match acted {
            Acted::Reached { .. } | Acted::Failed => Handled::Acted {
                action: Action::Sleep,
                follow_up: None,
            },
            // The snapshot is being made: looked at again soon, as a scheduled sleep is.
            Acted::InFlight { .. } => Handled::Acted {
                action: Action::Sleep,
                follow_up: Some(FOLLOW_UP_AT_LEAST),
            },
            // Busy or throttled: the next tick finds it idle still, and sends it again.
            Acted::Retry { .. } => Handled::Idle,
        })
    }

    /// An idle agent inside its schedule's awake window: its owner asked for it awake until
    /// `end`, so it becomes idle then (the schedule's sleep, due then too, comes first).
    async fn idle_after_window(
        &self,
        store: Within<'_, S>,
        agent: &AgentRecord,
        end: u64,
    ) -> Result<Handled, Error> {
        let changes = Changes {
            idle_at_ms: Some(Some(end)),
            ..Changes::default()
        };
        // Lost to another writer: the next tick decides again from what it wrote.
        let lost = |e: &StoreError| matches!(e, StoreError::ConditionFailed { .. });
        let written = store
            .update(&agent.key, &Condition::Version(agent.version), &changes)
            .await;
        if let Some(e) = written.as_ref().err().filter(|e| !lost(e)) {
            return Err(e.clone().into());
        }
        Ok(Handled::Settled { ready: None })
    }
}
