//! How early the tick starts each wake within the longest lead (docs/schedules.md, "Ready at
//! the minute"), and what a wake it started tells of its kind's readiness.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use snapwake::agentkit::AgentKit;
use snapwake::ambient;
use snapwake::domain::{Action, AgentRecord, Kind, ScheduleRecord};
use snapwake::schedule::{wake_lead_ms, DueLead, Readiness, Step};
use snapwake::store::{AgentStore, ScheduleStore, Within};

use crate::Resume;

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// How early each wake within the longest lead starts: its kind's measured readiness
    /// (read once a tick; a kind that cannot be read starts at the minute) and how many wakes
    /// its minute holds.
    pub(super) async fn leads(&self, store: Within<'_, S>, ahead: &[ScheduleRecord]) -> Leads {
        let mut leads = Leads {
            readiness: HashMap::new(),
            per_minute: HashMap::new(),
            wakes_per_second: self.schedules.wakes_per_second,
        };
        for record in ahead {
            let (Some(key), Some(wake)) = (&record.key, record.next_wake_ms) else {
                continue;
            };
            *leads.per_minute.entry(minute(wake)).or_default() += 1;
            if let Entry::Vacant(unread) = leads.readiness.entry(key.kind) {
                unread.insert(match Readiness::read(&store, key.kind).await {
                    Ok(readiness) => readiness.p95(),
                    Err(e) => {
                        tracing::info!(error = %e, kind = %key.kind, "readiness unread: wakes start by the prior");
                        None
                    }
                });
            }
        }
        leads
    }
}

/// How early the wakes within the longest lead start ([`wake_lead_ms`]).
pub(super) struct Leads {
    /// Each kind's measured readiness (95th percentile), `None`: not measured yet.
    readiness: HashMap<Kind, Option<u64>>,
    /// Wakes due in each minute (epoch minutes).
    per_minute: HashMap<u64, usize>,
    wakes_per_second: u32,
}

impl Leads {
    /// The lead of `record`'s next wake: for its kind and its minute's crowd now, but never
    /// less than the lead kept with the occurrence, which its views promised the owner.
    pub(super) fn of(&self, record: &ScheduleRecord) -> u64 {
        self.for_record(record).of(record)
    }

    /// What the tick carries with `record`'s occurrence to whoever acts on it.
    pub(super) fn for_record(&self, record: &ScheduleRecord) -> DueLead {
        let Some(key) = &record.key else {
            return DueLead::default();
        };
        let now_ms = record.next_wake_ms.map_or(0, |wake| {
            let readiness = self.readiness.get(&key.kind).copied().flatten();
            let due = self.per_minute.get(&minute(wake)).copied().unwrap_or(0);
            wake_lead_ms(readiness, due, self.wakes_per_second)
        });
        DueLead {
            now_ms,
            alone_ms: self.alone(key.kind),
        }
    }

    /// The lead kept with a wake occurrence of `kind` when it is set: its kind's readiness (or
    /// the prior) and the margin alone, as if nothing else were due in its minute.
    fn alone(&self, kind: Kind) -> Option<u64> {
        let readiness = self.readiness.get(&kind).copied().flatten();
        Some(wake_lead_ms(readiness, 1, self.wakes_per_second))
    }
}

/// The epoch minute of `at_ms`: the wakes of one minute share the budget's time.
fn minute(at_ms: u64) -> u64 {
    at_ms / 60_000
}

/// When `step` finishes the wake the tick started as reached: how long the agent took to be
/// Ready, from the occurrence's start to the write that recorded it awake, or to `time_ms`
/// (the decider's time, when it looked: the tick's, or a follow-up's) if that is sooner or the
/// write is dated before the start (a tick deciding as of another time than the clock's).
pub(super) fn readiness_shown(
    schedule: &ScheduleRecord,
    step: &Step,
    agent: &AgentRecord,
    time_ms: u64,
) -> Option<(Kind, u64)> {
    let Step::Write(next) = step else {
        return None;
    };
    let open = schedule.open.as_ref()?;
    let last = next.last.as_ref()?;
    let finished = open.action == Action::Wake
        && last.action == Action::Wake
        && last.at_ms == open.at_ms
        && last.outcome == "reached";
    let started = open.started_ms.filter(|_| finished)?;
    let awake = agent
        .updated_at
        .as_deref()
        .and_then(ambient::epoch_ms)
        .filter(|at| *at >= started)
        .map_or(time_ms, |at| at.min(time_ms));
    Some((agent.key.kind, awake.saturating_sub(started)))
}
