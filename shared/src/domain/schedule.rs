//! A per-agent schedule as the table keeps it (docs/schedules.md): the definition a person
//! wrote, the next occurrence of each action, and the occurrence the ticks are carrying.

use serde::{Deserialize, Serialize};

use super::kind::AgentKey;

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

/// What the last attempt at an occurrence left, so the next tick knows whether acting again
/// could undo what someone else did since (docs/schedules.md, "Carrying an occurrence").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attempt {
    /// Recorded before acting, outcome unknown: act again only if the agent has not moved.
    Acting,
    /// The wake or sleep is in flight: drive it on (joining never starts a second one).
    InFlight,
    /// Came to nothing (agent busy, AgentKit or store away): act again unless the agent moved
    /// (its version is read after the attempt, which may have taken the lock).
    Retry,
}

/// One occurrence of one action, carried by the ticks until the agent reaches its state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    pub action: Action,
    /// The instant it was due (epoch ms).
    pub at_ms: u64,
    pub attempt: Attempt,
    /// The agent record's version when the attempt was recorded (0: no record; `Retry`: after).
    pub seen_version: u64,
    /// [`crate::domain::AgentRecord::rest_mark`] at the attempt; `None` in older items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen_rest: Option<u64>,
    /// When first acted on (epoch ms): before `at_ms` for a wake started early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// When the consumer that last acted follows it up (delayed fan-out); not resent till then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up_ms: Option<u64>,
}

/// A schedule as the table keeps it: `SCHEDULE#<kind>#<agent_id>` (docs/table.md). The default
/// is no schedule at all (nothing due), for building one field by field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// How early the next wake starts at the latest, from its kind's readiness when set
    /// (docs/schedules.md, "Ready at the minute"). `None`: nothing measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_wake_lead_ms: Option<u64>,
    /// When the ticks next make sure a reached day's session lasts until its sleep: AgentKit
    /// ends a session after 8 h, and a day can be longer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_ms: Option<u64>,
    /// The occurrence being carried, if any.
    #[serde(default)]
    pub open: Option<Occurrence>,
    /// The last occurrence the ticks finished with.
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
    /// `reached`, `failed`, `missed` (over `crate::schedule`'s `CATCH_UP_MS` late), `superseded`,
    /// `moved` (someone changed the agent meanwhile) or `refused` (owner being offboarded).
    pub outcome: String,
}

impl ScheduleRecord {
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

    /// When a tick should next act on this schedule, a wake counting as due `wake_lead_ms`
    /// before its minute. `None`: never (the sparse index leaves it out).
    pub fn starts_at_ms(&self, wake_lead_ms: u64) -> Option<u64> {
        let occurrence = match &self.open {
            Some(open) => Some(open.started_ms.unwrap_or(open.at_ms)),
            None => earliest(self.wake_starts_at_ms(wake_lead_ms), self.next_sleep_ms),
        };
        earliest(occurrence, self.keep_ms)
    }

    /// When the next wake starts, `wake_lead_ms` early but never before a sleep due ahead.
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

fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What the agent record keeps of its schedule, so every view (a list page among them) shows
/// it without reading the item. Written in the same transaction as the item, so they agree.
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_wake_lead_ms: Option<u64>,
}

impl ScheduleSummary {
    /// The minute whose tick starts the next wake at the latest: ticks come on whole minutes.
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
    /// When waking starts at the latest to be Ready by `next_wake_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_starts_at: Option<String>,
    pub next_sleep_at: Option<String>,
}
