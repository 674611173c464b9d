//! A schedule request's body checked into a [`Plan`], the rules a plan must keep
//! ([`ScheduleRules`]), and the occurrences a plan has next.

use std::time::Duration;

use serde::Deserialize;

use crate::calendar::{self, Cron, Zone};
use crate::domain::{Action, ScheduleRecord};
use crate::error::Error;

/// `PUT …/schedule`: unknown fields are refused, so a misspelt `wakes` is not silently dropped.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleBody {
    pub timezone: Option<String>,
    #[serde(default)]
    pub wake: Option<String>,
    #[serde(default)]
    pub sleep: Option<String>,
}

/// What a schedule may ask beyond being valid: every occurrence costs a snapshot or a Resume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleRules {
    /// Shortest gap between two occurrences (`SNAPWAKE_SCHEDULE_MIN_INTERVAL_S`; 0: no floor).
    pub min_interval: Duration,
    /// Scheduled wakes started a second (`crate::budget`'s background lane); leads allow for it.
    pub wakes_per_second: u32,
    /// Idle agents handed to the queue a second (docs/idle.md, "Everyone at once"): the
    /// background lane of CreateSessionSnapshot's limit, at its whole rate.
    pub idle_sleeps_per_second: u32,
}

/// The background lane of AgentKit's assumed Resume limit (20 a second: 90% of it, less the
/// people's fifth: 14), slowed to half as AgentKit's 429s can slow it (`crate::budget`).
pub const DEFAULT_WAKES_PER_SECOND: u32 = 7;

/// The background lane of AgentKit's assumed CreateSessionSnapshot limit (20 a second: 90% of
/// it, less the people's fifth). Not slowed to half as wakes are: an idle sleep late by a few
/// seconds costs little, and the budget paces the calls whatever the hand-over's pace.
pub const DEFAULT_IDLE_SLEEPS_PER_SECOND: u32 = 14;

impl ScheduleRules {
    /// These rules with the rates planned from the deployment's AgentKit budget (its background
    /// lanes; the defaults above when there is no budget): what `Config` reads, and what a bench
    /// assuming other limits sets.
    pub fn paced_by(self, budget: Option<&crate::budget::BudgetSettings>) -> ScheduleRules {
        use crate::agentkit::types::{
            Action as _, CreateSessionSnapshot, ResumeSessionFromSnapshot,
        };
        let background = |action| budget.and_then(|b| b.lanes(action)).map(|l| l.background);
        ScheduleRules {
            // A burst is when 429s come: a scheduled wake's lead plans the lane at its slowest.
            wakes_per_second: background(ResumeSessionFromSnapshot::NAME)
                .map_or(DEFAULT_WAKES_PER_SECOND, |b| {
                    crate::budget::at_slowest(b).max(1)
                }),
            idle_sleeps_per_second: background(CreateSessionSnapshot::NAME)
                .map_or(DEFAULT_IDLE_SLEEPS_PER_SECOND, |b| b.max(1)),
            ..self
        }
    }
}

impl Default for ScheduleRules {
    fn default() -> Self {
        ScheduleRules {
            min_interval: Duration::from_secs(3600),
            wakes_per_second: DEFAULT_WAKES_PER_SECOND,
            idle_sleeps_per_second: DEFAULT_IDLE_SLEEPS_PER_SECOND,
        }
    }
}

/// A schedule whose zone and expressions are known to be valid.
#[derive(Clone, Debug)]
pub struct Plan {
    pub zone: Zone,
    pub wake: Option<Cron>,
    pub sleep: Option<Cron>,
}

impl Plan {
    /// Check a body; every refusal (a cron that never fires included) is a 422 naming its field.
    pub fn check(body: &ScheduleBody) -> Result<Plan, Error> {
        let zone = match body.timezone.as_deref() {
            None => {
                return Err(invalid(
                    "timezone",
                    "an IANA time zone is required, e.g. \"Europe/Berlin\"".into(),
                ))
            }
            Some(name) => Zone::named(name).map_err(|e| invalid("timezone", e.to_string()))?,
        };
        let wake = cron("wake", body.wake.as_deref(), &zone)?;
        let sleep = cron("sleep", body.sleep.as_deref(), &zone)?;
        Ok(Plan { zone, wake, sleep })
    }

    /// Refuse (422) a cron firing more often than `min_interval`, or a wake and sleep in a minute.
    pub fn keeps(&self, rules: &ScheduleRules) -> Result<(), Error> {
        let today = self.zone.date_at(jiff::Timestamp::now());
        let floor_min = rules.min_interval.as_secs().div_ceil(60);
        for (field, cron) in [("wake", &self.wake), ("sleep", &self.sleep)] {
            let Some(cron) = cron else { continue };
            let gap = calendar::shortest_gap(cron, today);
            if u64::from(gap) < floor_min {
                return Err(invalid(
                    field,
                    format!(
                        "\"{cron}\" fires {gap} min apart; a schedule fires at most every {}",
                        every(floor_min)
                    ),
                ));
            }
        }
        if let (Some(wake), Some(sleep)) = (&self.wake, &self.sleep) {
            if let Some(both) = calendar::shared_minute(wake, sleep, today) {
                return Err(invalid(
                    "sleep",
                    format!(
                        "\"{sleep}\" and the wake \"{wake}\" both fire at {}: a wake and a \
                         sleep must not fall in the same minute",
                        both.strftime("%Y-%m-%d %H:%M")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Read a stored schedule back (`None`: written by a newer version, left alone).
    pub fn of(record: &ScheduleRecord) -> Option<Plan> {
        let zone = Zone::named(&record.timezone).ok()?;
        let parse = |e: &Option<String>| -> Option<Option<Cron>> {
            match e {
                None => Some(None),
                Some(text) => text.parse().ok().map(Some),
            }
        };
        Some(Plan {
            zone,
            wake: parse(&record.wake)?,
            sleep: parse(&record.sleep)?,
        })
    }

    pub fn cron(&self, action: Action) -> Option<&Cron> {
        match action {
            Action::Wake => self.wake.as_ref(),
            Action::Sleep => self.sleep.as_ref(),
        }
    }

    /// The first occurrence of `action` strictly after `after_ms`.
    pub fn next(&self, action: Action, after_ms: u64) -> Option<u64> {
        let cron = self.cron(action)?;
        let after = jiff::Timestamp::from_millisecond(i64::try_from(after_ms).ok()?).ok()?;
        let next = calendar::next_after(cron, &self.zone, after)?;
        u64::try_from(next.as_millisecond()).ok()
    }

    /// A new schedule item from this plan, its next occurrences counted from `now_ms`.
    pub fn record(&self, now_ms: u64) -> ScheduleRecord {
        ScheduleRecord {
            key: None,
            timezone: self.zone.name().to_string(),
            wake: self.wake.as_ref().map(|c| c.to_string()),
            sleep: self.sleep.as_ref().map(|c| c.to_string()),
            next_wake_ms: self.next(Action::Wake, now_ms),
            next_sleep_ms: self.next(Action::Sleep, now_ms),
            ..ScheduleRecord::default()
        }
    }
}

fn cron(field: &'static str, text: Option<&str>, zone: &Zone) -> Result<Option<Cron>, Error> {
    let Some(text) = text else { return Ok(None) };
    let cron: Cron = text
        .parse()
        .map_err(|e: calendar::CronError| invalid(field, e.to_string()))?;
    let now = jiff::Timestamp::now();
    if calendar::next_after(&cron, zone, now).is_none() {
        return Err(invalid(
            field,
            format!("\"{cron}\" never fires (no such day in the coming years)"),
        ));
    }
    Ok(Some(cron))
}

/// `minutes` as a person says it: "hour", "2 hours", "90 min".
fn every(minutes: u64) -> String {
    match minutes {
        60 => "hour".into(),
        m if m % 60 == 0 => format!("{} hours", m / 60),
        m => format!("{m} min"),
    }
}

fn invalid(field: &'static str, detail: String) -> Error {
    Error::InvalidField { field, detail }
}
