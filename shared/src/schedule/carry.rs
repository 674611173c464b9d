//! What a tick does with one due schedule: a pure function of the schedule item, the tick's time
//! and the agent's record, so every case is a unit test.
//!
//! At most once per occurrence: the acting step is written to the item first (a CAS on its
//! version), so of two ticks only one acts (docs/schedules.md, "Carrying an occurrence").

use super::Plan;
use crate::domain::{Action, Attempt, Occurrence, ScheduleRecord, Settled, WakeState};

/// How late an occurrence may still be acted on, rather than wake an agent at the wrong hour.
pub const CATCH_UP_MS: u64 = 15 * 60 * 1000;

/// The agent's record as the tick read it (consistent read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentSeen {
    /// 0: no record.
    pub version: u64,
    /// Where it rests ([`crate::domain::AgentRecord::rest_mark`]).
    pub rest: u64,
    /// `Asleep` when there is no record.
    pub state: WakeState,
    /// A wake or sleep holds it under a live lease.
    pub in_flight: bool,
}

impl AgentSeen {
    /// Whether the agent is where `action` wants it, with nothing in flight.
    fn reached(&self, action: Action) -> bool {
        !self.in_flight
            && match action {
                Action::Wake => self.state == WakeState::Awake,
                // A failed wake leaves the agent asleep.
                Action::Sleep => matches!(self.state, WakeState::Asleep | WakeState::Failed),
            }
    }
}

/// What to do with one schedule at one tick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing is due at this tick's time (a stale index entry, a repeated older tick).
    Idle,
    /// Write this record (occurrences skipped, or one finished with) and act on nothing.
    Write(ScheduleRecord),
    /// Write this record (`open` marked [`Attempt::Acting`]); act only if that write succeeded.
    Act {
        record: ScheduleRecord,
        action: Action,
        carried: bool,
    },
}

/// Decide for `record` at tick time `now_ms`, every occurrence at its minute.
pub fn decide(record: &ScheduleRecord, plan: &Plan, now_ms: u64, agent: &AgentSeen) -> Step {
    decide_early(record, plan, now_ms, agent, 0)
}

/// [`decide`], a wake counting as due `wake_lead_ms` early so that it is Ready at its minute.
pub fn decide_early(
    record: &ScheduleRecord,
    plan: &Plan,
    now_ms: u64,
    agent: &AgentSeen,
    wake_lead_ms: u64,
) -> Step {
    let mut next = record.clone();
    // New occurrences first: the newest due supersedes older ones (the owner's latest intent).
    let wake_starts = record.wake_starts_at_ms(wake_lead_ms);
    let wake = record
        .next_wake_ms
        .filter(|_| wake_starts.is_some_and(|starts| starts <= now_ms))
        .map(|at| (Action::Wake, at));
    let sleep = record
        .next_sleep_ms
        .filter(|at| *at <= now_ms)
        .map(|at| (Action::Sleep, at));
    // The next occurrence after its minute, which an early wake is still before.
    if let Some((_, at)) = wake {
        next.next_wake_ms = plan.next(Action::Wake, now_ms.max(at));
    }
    if let Some((_, at)) = sleep {
        next.next_sleep_ms = plan.next(Action::Sleep, now_ms.max(at));
    }
    let newest = match (wake, sleep) {
        (Some(w), Some(s)) => Some(if s.1 > w.1 { s } else { w }),
        (w, s) => w.or(s),
    };
    if let Some((action, at_ms)) = newest {
        if let Some(open) = &record.open {
            next.last = Some(settled(open.action, open.at_ms, "superseded"));
        }
        if now_ms.saturating_sub(at_ms) > CATCH_UP_MS {
            // Too late, but an agent already where it should be has it reached: its day is kept.
            next.open = None;
            let outcome = if agent.reached(action) {
                "reached"
            } else {
                "missed"
            };
            next.last = Some(settled(action, at_ms, outcome));
            keep_after(&mut next, now_ms);
            return Step::Write(next);
        }
        next.open = Some(acting(action, at_ms, agent, now_ms));
        // A new occurrence begins a new day (kept anew once its wake is reached) or ends it.
        next.keep_ms = None;
        return Step::Act {
            record: next,
            action,
            carried: false,
        };
    }

    let Some(open) = &record.open else {
        return Step::Idle;
    };
    if open.started_ms.unwrap_or(open.at_ms) > now_ms {
        // A tick older than the occurrence's start (repeated late): nothing to do at its time.
        return Step::Idle;
    }
    let finish = |outcome: &str| {
        let mut done = next.clone();
        done.open = None;
        done.last = Some(settled(open.action, open.at_ms, outcome));
        keep_after(&mut done, now_ms);
        Step::Write(done)
    };
    if agent.reached(open.action) {
        return finish("reached");
    }
    if now_ms.saturating_sub(open.at_ms) > CATCH_UP_MS {
        return finish("missed");
    }
    // Act again only if the agent has not moved (where it rests, not any write) since the attempt
    // was recorded: else our attempt or a person settled it, and acting again could undo their
    // change. A wake or sleep in flight is driven on; this very action left lapsed is taken over.
    let unmoved = match open.seen_rest {
        Some(rest) => agent.rest == rest,
        None => agent.version == open.seen_version,
    };
    let abandoned = !agent.in_flight && agent.state == holding(open.action);
    let again = match open.attempt {
        // Our attempt came to nothing; its version is the record's after it.
        Attempt::Retry => unmoved || abandoned,
        Attempt::Acting | Attempt::InFlight => agent.in_flight || unmoved || abandoned,
    };
    if !again {
        return finish("moved");
    }
    next.open = Some(acting(
        open.action,
        open.at_ms,
        agent,
        open.started_ms.unwrap_or(now_ms),
    ));
    Step::Act {
        record: next,
        action: open.action,
        carried: true,
    }
}

/// Once a scheduled wake is reached, the ticks keep the day until its sleep (`keep_ms`).
pub fn keep_after(record: &mut ScheduleRecord, now_ms: u64) {
    let reached_wake = record
        .last
        .as_ref()
        .is_some_and(|l| l.action == Action::Wake && l.outcome == "reached");
    record.keep_ms = (reached_wake && record.next_sleep_ms.is_some()).then_some(now_ms);
}

/// The state a record holds while `action` is carried out under the lock.
fn holding(action: Action) -> WakeState {
    match action {
        Action::Wake => WakeState::Waking,
        Action::Sleep => WakeState::Sleeping,
    }
}

fn acting(action: Action, at_ms: u64, agent: &AgentSeen, started_ms: u64) -> Occurrence {
    Occurrence {
        action,
        at_ms,
        attempt: Attempt::Acting,
        seen_version: agent.version,
        seen_rest: Some(agent.rest),
        started_ms: Some(started_ms),
        follow_up_ms: None,
    }
}

fn settled(action: Action, at_ms: u64, outcome: &str) -> Settled {
    Settled {
        action,
        at_ms,
        outcome: outcome.to_string(),
    }
}

#[cfg(test)]
mod tests;
