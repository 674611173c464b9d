//! What a tick does with one due schedule, decided from the schedule item, the tick's time and
//! the agent's record as read now: a pure function, so every case is a unit test.
//!
//! At most once per occurrence: the step that acts is written to the schedule item first (a
//! conditional write on its version), so of two ticks deciding on the same item only one acts;
//! an occurrence still carried is acted on again only when doing so cannot undo someone
//! else's change (docs/schedules.md, "Carrying an occurrence").

use super::Plan;
use crate::domain::{Action, Attempt, Occurrence, ScheduleRecord, Settled, WakeState};

/// How late an occurrence may still be acted on: a tick that arrives later (a Scheduler outage,
/// a throttled function) skips it rather than wake an agent at the wrong hour.
pub const CATCH_UP_MS: u64 = 15 * 60 * 1000;

/// The agent's record as the tick read it (consistent read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentSeen {
    /// 0: no record.
    pub version: u64,
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
    /// Write this record (its `open` occurrence marked [`Attempt::Acting`]), then, only if that
    /// write succeeded, wake or put the agent to sleep: an occurrence just come due
    /// (`carried: false`) or one carried on from an earlier tick.
    Act {
        record: ScheduleRecord,
        action: Action,
        carried: bool,
    },
}

/// Decide for `record` at tick time `now_ms`.
pub fn decide(record: &ScheduleRecord, plan: &Plan, now_ms: u64, agent: &AgentSeen) -> Step {
    let mut next = record.clone();
    // New occurrences first: the newest one due wins, older ones (and an occurrence still
    // carried) are superseded — the owner's latest intent is what counts.
    let due = |at: Option<u64>| at.filter(|at| *at <= now_ms);
    let wake = due(record.next_wake_ms).map(|at| (Action::Wake, at));
    let sleep = due(record.next_sleep_ms).map(|at| (Action::Sleep, at));
    if wake.is_some() {
        next.next_wake_ms = plan.next(Action::Wake, now_ms);
    }
    if sleep.is_some() {
        next.next_sleep_ms = plan.next(Action::Sleep, now_ms);
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
            next.open = None;
            next.last = Some(settled(action, at_ms, "missed"));
            return Step::Write(next);
        }
        next.open = Some(acting(action, at_ms, agent));
        return Step::Act {
            record: next,
            action,
            carried: false,
        };
    }

    let Some(open) = &record.open else {
        return Step::Idle;
    };
    if open.at_ms > now_ms {
        // A tick older than the occurrence (repeated late): nothing to do at its time.
        return Step::Idle;
    }
    let finish = |outcome: &str| {
        let mut done = next.clone();
        done.open = None;
        done.last = Some(settled(open.action, open.at_ms, outcome));
        Step::Write(done)
    };
    if agent.reached(open.action) {
        return finish("reached");
    }
    if now_ms.saturating_sub(open.at_ms) > CATCH_UP_MS {
        return finish("missed");
    }
    // Act again only if the agent has not moved since the attempt was recorded: if it has,
    // our attempt (or a person) settled it, and acting again could wake an agent its owner
    // just put to sleep. A wake or sleep in flight is driven on (joining starts nothing new).
    // A move that is this very action left unfinished (a `waking` record for a wake, its lease
    // lapsed: the holder died, the tick that acquired it perhaps) settled nothing: acting
    // again takes the lapsed lock over, as any caller would, and undoes nobody's change.
    let unmoved = agent.version == open.seen_version;
    let abandoned = !agent.in_flight && agent.state == holding(open.action);
    let again = match open.attempt {
        // Our attempt came to nothing; its version is the record's after it.
        Attempt::Retry => unmoved || abandoned,
        Attempt::Acting | Attempt::InFlight => agent.in_flight || unmoved || abandoned,
    };
    if !again {
        return finish("moved");
    }
    next.open = Some(acting(open.action, open.at_ms, agent));
    Step::Act {
        record: next,
        action: open.action,
        carried: true,
    }
}

/// The state a record holds while `action` is carried out under the lock.
fn holding(action: Action) -> WakeState {
    match action {
        Action::Wake => WakeState::Waking,
        Action::Sleep => WakeState::Sleeping,
    }
}

fn acting(action: Action, at_ms: u64, agent: &AgentSeen) -> Occurrence {
    Occurrence {
        action,
        at_ms,
        attempt: Attempt::Acting,
        seen_version: agent.version,
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
