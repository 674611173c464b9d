//! Usage's arithmetic (docs/usage.md), free of I/O: what an agent's announced changes add to
//! its days, and what it saves against the reference Studio.
//!
//! Every announced write leaves a [`UsageMark`] on the record: how the agent rests (awake,
//! asleep, gone), since when, what woke it, and when the reference Studio's session began. The
//! change that ends a state closes its interval: [`tally_change`] reads the mark the change
//! found (the stream's old image) and the change itself, so a change's tally is a function of
//! the change alone and adding it once per change is exact. What is still open (the agent
//! awake now) is [`tally_open`], added when a report is read. Days are UTC days; everything is
//! in whole seconds, as the records' times are.

use std::collections::BTreeMap;

use super::event::{named, Announce, Trigger};

/// A day in seconds.
pub const DAY_S: u64 = 86_400;
/// A session's whole life on AgentKit: what the reference Studio runs for each wake.
pub const SESSION_S: u64 = 8 * 3_600;

/// How an agent rests between its announced changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resting {
    Awake,
    Asleep,
    Gone,
}

impl Resting {
    pub fn as_str(self) -> &'static str {
        match self {
            Resting::Awake => "awake",
            Resting::Asleep => "asleep",
            Resting::Gone => "gone",
        }
    }
}

impl std::str::FromStr for Resting {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        use Resting::*;
        named(&[Awake, Asleep, Gone], Resting::as_str, s)
    }
}

/// What put an agent's session up: a person (their call through the API, a create), their
/// schedule, or AgentKit (a session snapwake learned of, docs/events.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WokenBy {
    Person,
    Schedule,
    Agentkit,
}

impl WokenBy {
    pub fn as_str(self) -> &'static str {
        match self {
            WokenBy::Person => "person",
            WokenBy::Schedule => "schedule",
            WokenBy::Agentkit => "agentkit",
        }
    }

    /// A wake's trigger as what woke it. Only HTTP, the tick and AgentKit wake an agent; the
    /// others (the sweep, offboarding, idle sleep) never do, and would read as a person.
    pub fn of(trigger: Trigger) -> WokenBy {
        match trigger {
            Trigger::Schedule => WokenBy::Schedule,
            Trigger::Agentkit => WokenBy::Agentkit,
            _ => WokenBy::Person,
        }
    }
}

impl std::str::FromStr for WokenBy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        use WokenBy::*;
        named(&[Person, Schedule, Agentkit], WokenBy::as_str, s)
    }
}

/// What an agent's last announced change left: the record keeps it until the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsageMark {
    pub resting: Resting,
    /// When that change was written (epoch seconds): the open interval's start.
    pub since_s: u64,
    /// What woke it last (kept through its sleep; meaningful while awake).
    pub woken_by: Option<WokenBy>,
    /// When its last wake or create began the reference Studio's session (epoch seconds); none
    /// once deleted.
    pub reference_from_s: Option<u64>,
}

impl UsageMark {
    /// The mark a change `what` by `trigger` at `at_s` leaves, after `before`. The DynamoDB
    /// adapter writes the same in its update expression (fields it does not set are kept).
    pub fn after(before: Option<&UsageMark>, what: Announce, trigger: Trigger, at_s: u64) -> Self {
        match what {
            Announce::Awake | Announce::Created => UsageMark {
                resting: Resting::Awake,
                since_s: at_s,
                woken_by: Some(WokenBy::of(trigger)),
                reference_from_s: Some(at_s),
            },
            Announce::Asleep | Announce::WakeFailed => UsageMark {
                resting: Resting::Asleep,
                since_s: at_s,
                woken_by: before.and_then(|m| m.woken_by),
                reference_from_s: before.and_then(|m| m.reference_from_s),
            },
            Announce::Deleted => UsageMark {
                resting: Resting::Gone,
                since_s: at_s,
                woken_by: before.and_then(|m| m.woken_by),
                reference_from_s: None,
            },
        }
    }
}

/// One agent's day, or a sum of them. Seconds and counts; the field names are the store's
/// attributes, the CSV's columns and the JSON's leaves (docs/usage.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub awake_person_s: u64,
    pub awake_schedule_s: u64,
    pub awake_agentkit_s: u64,
    pub asleep_s: u64,
    /// What the reference Studio would have kept awake: each wake's session for 8 hours or
    /// until the next wake.
    pub reference_s: u64,
    pub wakes: u64,
    pub creates: u64,
    pub failed_wakes: u64,
    pub sleeps_person: u64,
    pub sleeps_schedule: u64,
    pub sleeps_idle: u64,
    pub sleeps_agentkit: u64,
    /// Snapshots its sleeps kept.
    pub snapshots: u64,
}

impl Tally {
    /// The fields' names, in [`Tally::values`]' order.
    pub const FIELDS: [&'static str; 13] = [
        "awake_person_s",
        "awake_schedule_s",
        "awake_agentkit_s",
        "asleep_s",
        "reference_s",
        "wakes",
        "creates",
        "failed_wakes",
        "sleeps_person",
        "sleeps_schedule",
        "sleeps_idle",
        "sleeps_agentkit",
        "snapshots",
    ];

    pub fn values(&self) -> [u64; 13] {
        [
            self.awake_person_s,
            self.awake_schedule_s,
            self.awake_agentkit_s,
            self.asleep_s,
            self.reference_s,
            self.wakes,
            self.creates,
            self.failed_wakes,
            self.sleeps_person,
            self.sleeps_schedule,
            self.sleeps_idle,
            self.sleeps_agentkit,
            self.snapshots,
        ]
    }

    pub fn from_values(v: [u64; 13]) -> Tally {
        let [awake_person_s, awake_schedule_s, awake_agentkit_s, asleep_s, reference_s, wakes, creates, failed_wakes, sleeps_person, sleeps_schedule, sleeps_idle, sleeps_agentkit, snapshots] =
            v;
        Tally {
            awake_person_s,
            awake_schedule_s,
            awake_agentkit_s,
            asleep_s,
            reference_s,
            wakes,
            creates,
            failed_wakes,
            sleeps_person,
            sleeps_schedule,
            sleeps_idle,
            sleeps_agentkit,
            snapshots,
        }
    }

    pub fn add(&mut self, other: &Tally) {
        let mut sum = self.values();
        for (s, o) in sum.iter_mut().zip(other.values()) {
            *s += o;
        }
        *self = Tally::from_values(sum);
    }

    pub fn awake_s(&self) -> u64 {
        self.awake_person_s + self.awake_schedule_s + self.awake_agentkit_s
    }

    /// The reference Studio's seconds awake less ours: negative when keepalives held a session
    /// past the reference's 8 hours.
    pub fn saved_s(&self) -> i64 {
        self.reference_s as i64 - self.awake_s() as i64
    }

    fn awake_by(&mut self, by: Option<WokenBy>) -> &mut u64 {
        match by.unwrap_or(WokenBy::Person) {
            WokenBy::Person => &mut self.awake_person_s,
            WokenBy::Schedule => &mut self.awake_schedule_s,
            WokenBy::Agentkit => &mut self.awake_agentkit_s,
        }
    }

    /// The sleep counter of `trigger`; the sweep and offboarding delete, never sleep.
    fn sleeps_by(&mut self, trigger: Trigger) -> Option<&mut u64> {
        match trigger {
            Trigger::Http => Some(&mut self.sleeps_person),
            Trigger::Schedule => Some(&mut self.sleeps_schedule),
            Trigger::Idle => Some(&mut self.sleeps_idle),
            Trigger::Agentkit => Some(&mut self.sleeps_agentkit),
            Trigger::Sweep | Trigger::Offboarding => None,
        }
    }
}

/// Tallies by day (days since 1970-01-01, UTC).
pub type Days = BTreeMap<u64, Tally>;

/// `[from_s, to_s)` spread over the days it crosses, each day's seconds added by `add`.
fn spread(days: &mut Days, from_s: u64, to_s: u64, add: impl Fn(&mut Tally) -> &mut u64) {
    let mut t = from_s;
    while t < to_s {
        let day = t / DAY_S;
        let end = ((day + 1) * DAY_S).min(to_s);
        *add(days.entry(day).or_default()) += end - t;
        t = end;
    }
}

/// An announced change, as usage reads it.
#[derive(Clone, Copy, Debug)]
pub struct UsageChange<'m> {
    /// The mark the change found (none: the agent's first announced change, or one made before
    /// usage was kept).
    pub before: Option<&'m UsageMark>,
    pub what: Announce,
    pub trigger: Trigger,
    /// Whether the change kept a snapshot (a sleep's).
    pub kept_snapshot: bool,
    pub at_s: u64,
}

/// What `change` adds to its agent's days: the interval it ends, the reference Studio's session
/// a wake or a delete ends, and its own counts on its day.
pub fn tally_change(change: &UsageChange) -> Days {
    let mut days = Days::new();
    let at = change.at_s;
    if let Some(before) = change.before {
        let by = before.woken_by;
        match before.resting {
            Resting::Awake => spread(&mut days, before.since_s, at, |t| t.awake_by(by)),
            Resting::Asleep => spread(&mut days, before.since_s, at, |t| &mut t.asleep_s),
            Resting::Gone => {}
        }
        let ends_reference = matches!(
            change.what,
            Announce::Awake | Announce::Created | Announce::Deleted
        );
        if let (true, Some(from)) = (ends_reference, before.reference_from_s) {
            spread(&mut days, from, (from + SESSION_S).min(at), |t| {
                &mut t.reference_s
            });
        }
    }
    let today = days.entry(at / DAY_S).or_default();
    let was_awake = change.before.map(|b| b.resting) == Some(Resting::Awake);
    match change.what {
        Announce::Awake => today.wakes += 1,
        Announce::Created => today.creates += 1,
        Announce::Asleep => {
            if let Some(n) = today.sleeps_by(change.trigger) {
                *n += 1;
            }
            today.snapshots += u64::from(change.kept_snapshot);
        }
        // A session AgentKit ended with nothing kept is a sleep by its expiry; otherwise a wake
        // that failed.
        Announce::WakeFailed if was_awake => {
            if let Some(n) = today.sleeps_by(change.trigger) {
                *n += 1;
            }
        }
        Announce::WakeFailed => today.failed_wakes += 1,
        Announce::Deleted => {}
    }
    days
}

/// What `mark` adds up to `now_s` that no change has closed yet: the state it is in, and the
/// reference Studio's session still running.
pub fn tally_open(mark: &UsageMark, now_s: u64) -> Days {
    let mut days = Days::new();
    match mark.resting {
        Resting::Awake => spread(&mut days, mark.since_s, now_s, |t| {
            t.awake_by(mark.woken_by)
        }),
        Resting::Asleep => spread(&mut days, mark.since_s, now_s, |t| &mut t.asleep_s),
        Resting::Gone => {}
    }
    if let Some(from) = mark.reference_from_s {
        spread(&mut days, from, (from + SESSION_S).min(now_s), |t| {
            &mut t.reference_s
        });
    }
    days
}

/// A day as `YYYY-MM-DD`.
pub fn day_name(day: u64) -> String {
    i32::try_from(day)
        .ok()
        .and_then(|d| time::Date::from_julian_day(UNIX_EPOCH_JULIAN.checked_add(d)?).ok())
        .map(|d| format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day()))
        .unwrap_or_default()
}

/// `YYYY-MM-DD` as a day (none: not a date, or before 1970).
pub fn parse_day(s: &str) -> Option<u64> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let date = time::Date::parse(s, &format).ok()?;
    u64::try_from(date.to_julian_day() - UNIX_EPOCH_JULIAN).ok()
}

/// 1970-01-01's Julian day number.
const UNIX_EPOCH_JULIAN: i32 = 2_440_588;

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
