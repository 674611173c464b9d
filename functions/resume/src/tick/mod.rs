//! The schedules' tick (docs/schedules.md): every minute an EventBridge Scheduler schedule
//! invokes the function with `{"action": "tick", "time": "<aws.scheduler.scheduled-time>"}`.
//!
//! The tick works from the event's `time`, never this machine's clock, so a late or repeated
//! tick does what the on-time one did. It reads the schedules due within the next 15 minutes
//! from the sparse `by_due` index (never a scan), works out how early each wake starts to be
//! Ready at its minute (`lead.rs`), decides for each one due now
//! ([`snapwake::schedule::decide_early`]), records the
//! decision on the schedule item with a conditional write *before* acting — of two deciders
//! on one item only the one whose write lands acts — and then wakes or puts the agent to sleep
//! exactly as the HTTP routes do (`act.rs`), through the per-agent lock: a person clicking
//! Wake at the same minute joins the scheduled wake, and vice versa. An occurrence of an agent
//! whose owner is being offboarded is settled `refused`, with nothing asked of AgentKit.
//!
//! The tick only finds what is due and hands each occurrence to the fan-out queue
//! (`snapwake::fanout`, docs/schedules.md, "Fan-out"), whose consumer (`due.rs`) decides and
//! acts on it as below, many at once across invocations. A channel nobody else consumes (the
//! one-shot CLI, a function deployed without a queue, a test) is worked by the tick's own
//! invocation, through the same consumer.
//!
//! Every call to the table goes through one store bounded by the tick's deadline (each agent's
//! wake or sleep by its own, shorter one), so a table that hangs ends the tick in time. A
//! write that moves a schedule's next occurrences moves the summary on the agent record with
//! it, in one transaction (`ScheduleStore::set_schedule`).

use std::sync::Mutex;

use serde::Serialize;
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::domain::{
    Action, AgentRecord, ScheduleRecord, Settled, ToolRegistry, Trigger, WakeState,
};
use snapwake::error::Error;
use snapwake::fanout::{in_line, DueChannel, DueOccurrence, Fanout, AT_ONCE};
use snapwake::invocation::Deadline;
use snapwake::invocation::Invocation;
use snapwake::invocation::{self, Metric};
use snapwake::offboarding::{admit, Admitted};
use snapwake::schedule::readiness::LONGEST_LEAD_MS;
use snapwake::schedule::{decide_early, AgentSeen, DueLead, Plan, Step};
use snapwake::store::{AgentStore, DueCursor, DueQuery, ScheduleStore, StoreError, Within};

use crate::Resume;
use act::Acted;
use lead::readiness_shown;

mod act;
mod due;
mod handled;
mod idle;
mod keep;
mod lead;

pub use due::{BatchResponse, ItemFailure, QueueBatch, QueueMessage};
use handled::{Handled, FOLLOW_UP_LATE_MS};

/// Due schedules read per index query.
const PAGE: u32 = 100;

/// What one tick did.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct TickReport {
    /// The tick's time (epoch ms), from its event.
    pub time_ms: u64,
    /// Schedules due at this tick (a wake starting early to be Ready at its minute included).
    pub due: usize,
    /// Awake agents found idle at this tick and handed over (docs/idle.md): at most what the
    /// budget's lane puts to sleep in a minute; the next tick finds the rest.
    pub idle: usize,
    /// Of those due and idle, handed to the fan-out queue.
    pub queued: usize,
    /// The rest counts what its own invocation did as the consumer ([`Resume::tick_and_consume`];
    /// zero where a queue's consumers act). Occurrences that came due and were acted on:
    /// wakes and sleeps started (or joined).
    pub woke: usize,
    pub slept: usize,
    /// Occurrences carried on from an earlier tick (a wake or sleep in flight driven on, a
    /// busy agent tried again).
    pub carried: usize,
    /// Occurrences finished with without acting (reached already, missed, superseded).
    pub settled: usize,
    /// Schedules another tick was deciding on at the same moment.
    pub contended: usize,
    /// Schedules that could not be handled this time (the next tick tries again).
    pub errors: usize,
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// One tick at `time_ms` (the event's time), working until `deadline`. What it changes is
    /// announced as the schedule's doing; what it asks of AgentKit goes after people's calls.
    pub async fn tick(&self, time_ms: u64, deadline: Deadline) -> Result<TickReport, Error> {
        // Nobody waits on a tick: its AgentKit calls take the budget's background lane.
        Invocation::background(crate::FUNCTION, Trigger::Schedule)
            .run(self.tick_at(time_ms, deadline))
            .await
    }

    async fn tick_at(&self, time_ms: u64, deadline: Deadline) -> Result<TickReport, Error> {
        let store = Within::new(&self.store, deadline);
        let mut report = TickReport {
            time_ms,
            ..TickReport::default()
        };
        // Everything due within the longest lead, read first: how many wakes a minute holds
        // decides how early they start.
        let mut ahead = Vec::new();
        let mut after: Option<DueCursor> = None;
        loop {
            let until = time_ms + LONGEST_LEAD_MS;
            let page = store
                .due_schedules(DueQuery {
                    until_ms: until,
                    limit: PAGE,
                    after: after.as_ref(),
                })
                .await?;
            ahead.extend(page.records);
            match page.next {
                Some(next) if !deadline.is_past() => after = Some(next),
                _ => break,
            }
        }
        let leads = self.leads(store, &ahead).await;
        let due: Vec<ScheduleRecord> = ahead
            .into_iter()
            .filter(|record| {
                record
                    .starts_at_ms(leads.of(record))
                    .is_some_and(|starts| starts <= time_ms)
            })
            .collect();
        report.due = due.len();
        // An occurrence its consumer follows up is its consumer's, unless the follow-up is
        // late (lost with the consumer that meant to send it).
        let followed = |record: &&ScheduleRecord| {
            record
                .open
                .as_ref()
                .and_then(|o| o.follow_up_ms)
                .is_some_and(|at| time_ms < at + FOLLOW_UP_LATE_MS)
        };
        let mut messages: Vec<DueOccurrence> = due
            .iter()
            .filter(|record| !followed(record))
            .filter_map(|record| DueOccurrence::of(record, time_ms, leads.for_record(record)))
            .collect();
        // Idle agents go through the same queue (docs/idle.md), after the schedules' wakes, in
        // line at the pace the budget's lane takes their snapshots, as many as fill the minute
        // to the next tick (which finds the rest, idle still): "Everyone at once".
        let pace = self.schedules.idle_sleeps_per_second.max(1);
        let mut idle = self
            .idle_by(store, time_ms, pace as usize * 60, deadline)
            .await?;
        in_line(&mut idle, pace, now_ms());
        report.idle = idle.len();
        messages.extend(idle);
        // Not handed over: the tick fails, and the next one (or the Scheduler's retry) finds
        // the same occurrences due and sends them again.
        self.fanout
            .send(&messages)
            .await
            .map_err(|e| Error::Internal(e.to_string()))?;
        report.queued = messages.len();
        invocation::emit(
            Metric::of("tick")
                .count("SchedulesDue", report.due as u64)
                .count("AgentsIdle", report.idle as u64)
                .count("OccurrencesQueued", report.queued as u64),
        );
        tracing::info!(
            time_ms,
            due = report.due,
            idle = report.idle,
            queued = report.queued,
            "tick"
        );
        Ok(report)
    }

    /// A tick whose own invocation then consumes what it handed over, if the fan-out is a
    /// channel (the one-shot CLI, a function deployed without a queue, a test), until the
    /// channel is idle or `deadline` has passed; the report counts what the occurrences came to.
    /// With a queue, the tick alone.
    pub async fn tick_and_consume(
        &self,
        time_ms: u64,
        deadline: Deadline,
    ) -> Result<TickReport, Error> {
        let report = self.tick(time_ms, deadline).await?;
        let Fanout::Channel(channel) = &self.fanout else {
            return Ok(report);
        };
        let report = Invocation::background(crate::FUNCTION, Trigger::Schedule)
            .run(self.consume(channel, deadline, report))
            .await;
        invocation::emit(Metric::of("tick").count("TickErrors", report.errors as u64));
        Ok(report)
    }

    async fn consume(
        &self,
        channel: &DueChannel,
        deadline: Deadline,
        report: TickReport,
    ) -> TickReport {
        let counted = Mutex::new(report);
        channel
            .drain_until(AT_ONCE, deadline, |due| {
                let counted = &counted;
                async move {
                    let handled = self.due_at(&due, deadline).await;
                    let mut r = counted.lock().unwrap_or_else(|p| p.into_inner());
                    match &handled {
                        Ok(Handled::Acted {
                            action: Action::Wake,
                            ..
                        }) => r.woke += 1,
                        Ok(Handled::Acted {
                            action: Action::Sleep,
                            ..
                        }) => r.slept += 1,
                        Ok(Handled::Settled { .. } | Handled::Gone) => r.settled += 1,
                        Ok(Handled::Carried { .. }) => r.carried += 1,
                        Ok(Handled::Contended) => r.contended += 1,
                        Ok(Handled::Idle) => {}
                        Err(_) => r.errors += 1,
                    }
                    handled.is_ok()
                }
            })
            .await;
        counted.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// Decide for one due schedule and act; a lost race for the schedule item (or, with the
    /// next occurrences moving, for the agent record) is decided again from what the winner
    /// left.
    async fn handle_due(
        &self,
        store: Within<'_, S>,
        mut schedule: ScheduleRecord,
        time_ms: u64,
        lead: DueLead,
        registry: &ToolRegistry,
    ) -> Result<Handled, Error> {
        let Some(key) = schedule.key.clone() else {
            return Ok(Handled::Idle);
        };
        for _ in 0..3 {
            // Read from the item each round: a PUT that won the race may have changed it.
            // A schedule this version cannot read (written by a newer one) is left alone.
            let Some(plan) = Plan::of(&schedule) else {
                return Ok(Handled::Idle);
            };
            let mut agent = match store.get(&key).await? {
                Some(agent) if agent.state != WakeState::Gone => agent,
                // The agent was deleted (its delete removes the schedule too; this is the
                // backstop for a delete that stopped half-way).
                _ => {
                    store.delete_schedule(&key).await?;
                    return Ok(Handled::Gone);
                }
            };
            let seen = self.seen(&agent);
            let step = decide_early(&schedule, &plan, time_ms, &seen, lead.of(&schedule));
            let ready = readiness_shown(&schedule, &step, &agent, time_ms);
            let (mut next, mut action, carried) = match step {
                // Nothing due but the day's keep (docs/schedules.md, "A day longer than a
                // session").
                Step::Idle if schedule.keep_ms.is_some_and(|k| k <= time_ms) => {
                    return self.keep_day(store, schedule, registry).await
                }
                Step::Idle => return Ok(Handled::Idle),
                Step::Write(next) => (next, None, false),
                Step::Act {
                    record,
                    action,
                    carried,
                } => (record, Some(action), carried),
            };
            // The owner being offboarded: the occurrence is refused, nothing is acted on.
            let admitted = match action {
                Some(_) => refused_if_leaving(admit(&store, &key).await, &mut next)?,
                None => None,
            };
            action = action.filter(|_| admitted.is_some());
            if next.next_wake_ms != schedule.next_wake_ms {
                // The new occurrence keeps the lead its views show the owner.
                next.next_wake_lead_ms = lead.alone_ms;
            }
            let moves = next.next_wake_ms != schedule.next_wake_ms
                || next.next_sleep_ms != schedule.next_sleep_ms;
            let written = if moves {
                // The summary on the agent record moves with the next occurrences; that write
                // moves the record's version by one, which the attempt sees as its own.
                if let Some(open) = next
                    .open
                    .as_mut()
                    .filter(|o| o.seen_version == agent.version)
                {
                    open.seen_version += 1;
                }
                match store
                    .set_schedule(&agent, Some(&next), schedule.version)
                    .await
                {
                    Ok(written) => {
                        // As written, but for `updated_at`: the wake or sleep below decides
                        // from when the agent's last outcome was written, not its summary.
                        agent.version += 1;
                        agent.schedule = Some(next.summary());
                        written.unwrap_or(next)
                    }
                    Err(StoreError::Contended) => match store.get_schedule(&key).await? {
                        Some(current) => {
                            schedule = current;
                            continue;
                        }
                        None => return Ok(Handled::Gone),
                    },
                    Err(e) => return Err(e.into()),
                }
            } else {
                match store.put_schedule(&next, schedule.version).await {
                    Ok(written) => written,
                    // Another tick (or a PUT) wrote first: decide again from what it left.
                    Err(StoreError::ScheduleConflict {
                        current: Some(current),
                    }) => {
                        schedule = *current;
                        continue;
                    }
                    Err(StoreError::ScheduleConflict { current: None }) => {
                        return Ok(Handled::Gone)
                    }
                    Err(e) => return Err(e.into()),
                }
            };
            let (Some(action), Some(admitted)) = (action, admitted) else {
                return Ok(Handled::Settled { ready });
            };
            // A wake an earlier tick started, reached now: what it took is measured (to the
            // follow-up that saw it, a few seconds).
            let started = written.open.as_ref().and_then(|o| o.started_ms);
            let acting = tokio::time::Instant::now();
            let acted = self
                .act(store, action, &key, agent, registry, admitted, None)
                .await;
            // Only a session this wake started tells how long one takes to be Ready (one
            // found alive, made outside snapwake, took no time at all).
            let woke = matches!(acted, Acted::Reached { woke: true });
            let follow_up = self
                .record_outcome(store, &key, written, acted, time_ms)
                .await;
            return Ok(if carried {
                let ready = started
                    .filter(|_| woke && action == Action::Wake)
                    .map(|started| {
                        // In the tick's time, as `started` is: when it decided, and since.
                        let seen = time_ms + acting.elapsed().as_millis() as u64;
                        (key.kind, seen.saturating_sub(started))
                    });
                Handled::Carried { ready, follow_up }
            } else {
                Handled::Acted { action, follow_up }
            });
        }
        Ok(Handled::Contended)
    }

    fn seen(&self, agent: &AgentRecord) -> AgentSeen {
        AgentSeen {
            version: agent.version,
            rest: agent.rest_mark(),
            state: agent.state,
            in_flight: agent.state.is_held() && self.wake.lock.lease_is_live(agent, now_ms()),
        }
    }
}

/// The admission of an occurrence's act: `None` when the owner is being offboarded, and then
/// `next` records the occurrence `refused` (it is over; nothing was asked of AgentKit).
fn refused_if_leaving(
    admitted: Result<Admitted, Error>,
    next: &mut ScheduleRecord,
) -> Result<Option<Admitted>, Error> {
    match admitted {
        Ok(admitted) => Ok(Some(admitted)),
        Err(Error::AgentGone) => {
            if let Some(open) = next.open.take() {
                next.last = Some(Settled {
                    action: open.action,
                    at_ms: open.at_ms,
                    outcome: "refused".into(),
                });
            }
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
