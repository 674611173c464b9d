//! A per-agent schedule as the table keeps it (docs/schedules.md): the definition a person
//! wrote, the next occurrence of each action, and the occurrence the ticks are carrying.

use serde::{Deserialize, Serialize};

use super::key::AgentKey;

/// What a schedule does at an occurrence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Wake,
    Sleep,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Wake => "wake",
            Action::Sleep => "sleep",
        }
    }
}

/// What the last attempt at an occurrence left behind, so that the next tick knows whether
/// acting again could undo what someone else did since (docs/schedules.md, "Carrying an
/// occurrence").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attempt {
    /// Recorded before acting; the outcome is not known (a tick still at work, or one that
    /// died). Act again only if the agent's record has not moved since.
    Acting,
    /// The wake or sleep is in flight: drive it on (joining never starts a second one).
    InFlight,
    /// The attempt came to nothing (the agent was busy, or AgentKit or the store could not be
    /// reached): act again, unless the agent has moved since (its version is read after the
    /// attempt, which may have taken and given back the lock).
    Retry,
}

/// One occurrence of one action, carried by the ticks until the agent reaches its state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    pub action: Action,
    /// The instant it was due (epoch ms).
    pub at_ms: u64,
    pub attempt: Attempt,
    /// The agent record's version when the attempt was recorded (0: no record); for a
    /// `Retry`, after the attempt.
    pub seen_version: u64,
    /// Where the agent rested then ([`crate::domain::AgentRecord::rest_mark`]): what tells
    /// whether it has moved since. `None` in items written before it was kept (the version
    /// tells then, and any write moves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_rest: Option<u64>,
    /// The tick time it was first acted on (epoch ms): before `at_ms` when a wake starts early
    /// to be Ready by it (docs/schedules.md, "Ready at the minute"); `None` in items written
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// When the consumer that last acted on it follows it up (a message of the fan-out queue
    /// sent delayed until then): until a little after, the tick does not send it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up_ms: Option<u64>,
}

/// A schedule as the table keeps it: `SCHEDULE#<kind>#<agent_id>` (docs/table.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleRecord {
    #[serde(skip)]
    pub key: Option<AgentKey>,
    /// The IANA zone, as its canonical name.
    pub timezone: String,
    pub wake: Option<String>,
    pub sleep: Option<String>,
    /// The next occurrence of each action not yet taken (epoch ms).
    pub next_wake_ms: Option<u64>,
    pub next_sleep_ms: Option<u64>,
    /// How early the next wake starts at the latest, as its kind's readiness stood when the
    /// occurrence was set (docs/schedules.md, "Ready at the minute"); a crowded minute starts
    /// earlier. `None`: nothing measured then, or an item written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_wake_lead_ms: Option<u64>,
    /// During a scheduled day whose wake was reached, when the ticks next make sure the
    /// agent's session lasts until the day's sleep: AgentKit ends a session 8 h after it began,
    /// and a day can be longer (docs/schedules.md, "A day longer than a session").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_ms: Option<u64>,
    /// The occurrence being carried, if any.
    #[serde(default)]
    pub open: Option<Occurrence>,
    /// The last occurrence the ticks finished with, and how (`reached`, `missed`, ...).
    #[serde(default)]
    pub last: Option<Settled>,
    /// +1 on every write (store-side); 0 is never stored.
    #[serde(skip)]
    pub version: u64,
    #[serde(default)]
    pub updated_at: Option<String>,
}

/// How the ticks finished with an occurrence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settled {
    pub action: Action,
    pub at_ms: u64,
    /// `reached`, `failed`, `missed` (more than `CATCH_UP_MS` (`crate::schedule`) late), `superseded` (a later
    /// occurrence came due first), `moved` (someone changed the agent meanwhile), `refused`
    /// (the owner is being offboarded).
    pub outcome: String,
}

impl ScheduleRecord {
    /// What the agent record keeps of this schedule for its views.
    pub fn summary(&self) -> ScheduleSummary {
        ScheduleSummary {
            timezone: self.timezone.clone(),
            wake: self.wake.clone(),
            sleep: self.sleep.clone(),
            next_wake_ms: self.next_wake_ms,
            next_sleep_ms: self.next_sleep_ms,
            next_wake_lead_ms: self.next_wake_lead_ms,
        }
    }

    /// When the ticks next have work on it: the occurrence being carried is due at once,
    /// otherwise the earlier next occurrence. `None`: never (the sparse index leaves it out).
    /// When a tick should next act on this schedule, a wake counting as due `wake_lead_ms`
    /// before its minute (docs/schedules.md, "Ready at the minute"): the carried occurrence's
    /// start, else the earlier of the next wake's start and the next sleep.
    pub fn starts_at_ms(&self, wake_lead_ms: u64) -> Option<u64> {
        let occurrence = match &self.open {
            Some(open) => Some(open.started_ms.unwrap_or(open.at_ms)),
            None => earliest(self.wake_starts_at_ms(wake_lead_ms), self.next_sleep_ms),
        };
        earliest(occurrence, self.keep_ms)
    }

    /// When the next wake starts, `wake_lead_ms` before its minute, but never before a sleep
    /// due ahead of that minute: a wake started before it would be put to sleep by it.
    pub fn wake_starts_at_ms(&self, wake_lead_ms: u64) -> Option<u64> {
        Some(wake_starts_at_ms(
            self.next_wake_ms?,
            self.next_sleep_ms,
            wake_lead_ms,
        ))
    }

    pub fn due_at_ms(&self) -> Option<u64> {
        let occurrence = match &self.open {
            Some(open) => Some(open.at_ms),
            None => earliest(self.next_wake_ms, self.next_sleep_ms),
        };
        earliest(occurrence, self.keep_ms)
    }
}

/// The earlier of two instants, either of which may be none.
fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What the agent record keeps of its schedule, so that every view of the agent (a list page
/// among them, within its DynamoDB budget) shows it without reading the schedule item. Written
/// in the same transaction as the item whenever the definition or a next occurrence changes
/// (`crate::store::ScheduleStore::set_schedule`), so it always says what the item says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleSummary {
    pub timezone: String,
    pub wake: Option<String>,
    pub sleep: Option<String>,
    /// The item's next occurrences (epoch ms).
    #[serde(default)]
    pub next_wake_ms: Option<u64>,
    #[serde(default)]
    pub next_sleep_ms: Option<u64>,
    /// The item's [`ScheduleRecord::next_wake_lead_ms`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_wake_lead_ms: Option<u64>,
}

impl ScheduleSummary {
    /// The minute whose tick starts waking for the next wake at the latest (the owner's minute
    /// while nothing is measured): the ticks come on whole minutes, the first at or after the
    /// start starts it.
    pub fn wake_starts_at_ms(&self) -> Option<u64> {
        let wake = self.next_wake_ms?;
        let starts = wake_starts_at_ms(
            wake,
            self.next_sleep_ms,
            self.next_wake_lead_ms.unwrap_or(0),
        );
        Some((starts.div_ceil(60_000) * 60_000).min(wake))
    }
}

/// A wake at `wake` started `lead` early, but never before a sleep due ahead of it: a wake
/// started before that sleep would be put to sleep by it.
fn wake_starts_at_ms(wake: u64, sleep: Option<u64>, lead: u64) -> u64 {
    let early = wake.saturating_sub(lead);
    match sleep {
        Some(sleep) if sleep < wake && sleep >= early => sleep + 1,
        _ => early,
    }
}

/// `{"timezone", "wake", "sleep", "next_wake_at", "next_sleep_at"}` (RFC 3339 UTC instants).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleView {
    pub timezone: String,
    pub wake: Option<String>,
    pub sleep: Option<String>,
    pub next_wake_at: Option<String>,
    /// When snapwake starts waking the agent for `next_wake_at` at the latest, so that it is
    /// Ready by then: earlier by its kind's measured readiness, the same as `next_wake_at`
    /// while nothing is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_starts_at: Option<String>,
    pub next_sleep_at: Option<String>,
}
