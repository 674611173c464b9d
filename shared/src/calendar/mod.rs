//! When: five-field cron expressions in IANA time zones, and the instants they fire at
//! (docs/schedules.md, "When: cron and time zones"). The module owns the expression ([`Cron`]),
//! the zone ([`Zone`]) and the occurrences ([`next_after`], [`upcoming`]); what a schedule does
//! at an occurrence is `schedule`'s. Pure: no I/O, no clock.
//!
//! Occurrences are instants at second 0 of a local minute. A local time that does not exist (the
//! spring-forward gap) fires at the transition itself; one that exists twice (the autumn fold)
//! fires once, at the earlier instant. Several local times in one gap fire once, together. An
//! expression with no occurrence within [`HORIZON_DAYS`] never fires.

mod cron;
mod spacing;
mod zone;

#[cfg(test)]
mod tests;

use jiff::civil::{Date, DateTime};
use jiff::tz::AmbiguousOffset;
use jiff::Timestamp;

pub use cron::{Cron, CronError};
pub use spacing::{shared_minute, shortest_gap};
pub use zone::{Zone, ZoneError};

/// How far ahead an occurrence is looked for, about eight years: the longest wait between
/// two 29ths of February (2096 to 2104, 2100 is no leap year) fits, so `0 0 29 2 *` is always
/// found and `0 0 31 2 *` is known never to fire after ~3,000 cheap day checks. Rarer still
/// is possible (`0 0 29 2 */7`, a leap day on a Sunday, every 28 years or so: day-of-week
/// starts with `*`, so both day fields must match); beyond the horizon counts as never.
pub const HORIZON_DAYS: i32 = 366 * 8 + 2;

/// The first occurrence of `cron` in `zone` strictly after `after`; `None` when there is none
/// within [`HORIZON_DAYS`].
///
/// Candidate local times are read in order and each is mapped to its instant. That mapping
/// never goes backwards (a gap's times all map to its end, a fold's to its first pass), so
/// the first instant after `after` is the earliest occurrence. Days the expression does not
/// match are skipped with a few bit tests; the zone is consulted only for minutes that match.
pub fn next_after(cron: &Cron, zone: &Zone, after: Timestamp) -> Option<Timestamp> {
    // The local time `after` reads. It maps to `after` itself, or to the first pass when it
    // lies in the second pass of a fold, so by the ordering above no local time up to it can
    // fire later than `after`: the search starts on its date, past it.
    let now = zone.tz().to_datetime(after);
    let mut day = now.date();
    for _ in 0..HORIZON_DAYS {
        if cron.matches_date(day) {
            if let Some(found) = first_on(cron, zone, day, now, after) {
                return Some(found);
            }
        }
        day = day.tomorrow().ok()?;
    }
    None
}

/// The next `n` occurrences strictly after `after`, ascending (fewer when the expression
/// runs out within the horizon).
pub fn upcoming(cron: &Cron, zone: &Zone, after: Timestamp, n: usize) -> Vec<Timestamp> {
    let mut out = Vec::with_capacity(n.min(64));
    let mut from = after;
    while out.len() < n {
        match next_after(cron, zone, from) {
            Some(t) => {
                out.push(t);
                from = t;
            }
            None => break,
        }
    }
    out
}

/// The first occurrence on local day `day` after `after` (whose local reading is `now`), in
/// the order of local times, which is the order of instants.
fn first_on(
    cron: &Cron,
    zone: &Zone,
    day: Date,
    now: DateTime,
    after: Timestamp,
) -> Option<Timestamp> {
    for hour in cron.hours() {
        for minute in cron.minutes() {
            let local = day.at(hour, minute, 0, 0);
            if local <= now {
                continue;
            }
            // Still compared: in the second pass of a fold, a later local time can map to the
            // first pass, before `after`.
            if let Some(t) = instant(zone, local) {
                if t > after {
                    return Some(t);
                }
            }
        }
    }
    None
}

/// The instant a local time fires at in `zone`.
fn instant(zone: &Zone, local: DateTime) -> Option<Timestamp> {
    let tz = zone.tz();
    match tz.to_ambiguous_timestamp(local).offset() {
        AmbiguousOffset::Unambiguous { offset } => offset.to_timestamp(local).ok(),
        // The earlier of the two instants the local time names.
        AmbiguousOffset::Fold { before, after } => {
            let a = before.to_timestamp(local).ok()?;
            let b = after.to_timestamp(local).ok()?;
            Some(a.min(b))
        }
        // The transition: the local time read with the later (larger) offset is an instant
        // before the gap; the zone's next change after it is the gap's end.
        AmbiguousOffset::Gap { after, .. } => {
            let probe = after.to_timestamp(local).ok()?;
            tz.following(probe).next().map(|t| t.timestamp())
        }
    }
}
