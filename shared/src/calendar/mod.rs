//! When: five-field cron expressions in IANA time zones, and the instants they fire at
//! (docs/schedules.md, "Daylight saving and odd expressions"). Pure: no I/O, nothing of ours.
//!
//! Occurrences are instants. A local time that does not exist (the spring-forward gap) fires
//! at the next valid minute, which is the transition itself; a local time that exists twice
//! (the autumn fold) fires once, at the earlier instant. Several local times in one gap fire
//! once together, since an occurrence is always strictly after the previous one.
//!
//! Files: `cron.rs` (the expression), `zone.rs` (the zone), this (occurrences), `tests.rs`.

mod cron;
mod zone;

#[cfg(test)]
mod tests;

use jiff::civil::{Date, DateTime};
use jiff::tz::AmbiguousOffset;
use jiff::Timestamp;

pub use cron::{Cron, CronError};
pub use zone::{Zone, ZoneError};

/// How far ahead an occurrence is looked for: past every leap-day-on-a-weekday combination
/// (`0 0 29 2 MON` fires in some year of any eight), so "never within this" means never.
pub const HORIZON_DAYS: i32 = 366 * 8 + 2;

/// The first occurrence of `cron` in `zone` strictly after `after`; `None` when there is none
/// within [`HORIZON_DAYS`].
pub fn next_after(cron: &Cron, zone: &Zone, after: Timestamp) -> Option<Timestamp> {
    let tz = zone.tz();
    // A day earlier than `after`'s local date: a gap can move an occurrence of the previous
    // local day past `after` (never more than a day).
    let start = after.to_zoned(tz.clone()).date().yesterday().ok()?;
    let mut day = start;
    for _ in 0..HORIZON_DAYS {
        if cron.matches_date(day) {
            if let Some(found) = first_on(cron, zone, day, after) {
                return Some(found);
            }
        }
        day = day.tomorrow().ok()?;
    }
    None
}

/// The next `n` occurrences strictly after `after`.
pub fn upcoming(cron: &Cron, zone: &Zone, after: Timestamp, n: usize) -> Vec<Timestamp> {
    let mut out = Vec::with_capacity(n);
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

/// The first occurrence on local day `day` after `after`, in the order of local times, which
/// is the order of instants (a gap maps onto its transition, a fold onto its earlier instant).
fn first_on(cron: &Cron, zone: &Zone, day: Date, after: Timestamp) -> Option<Timestamp> {
    for hour in cron.hours() {
        for minute in cron.minutes() {
            let local = day.at(hour, minute, 0, 0);
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
        // The transition: the first instant after the local time read with the later offset
        // (which lies before the gap) at which the zone changes.
        AmbiguousOffset::Gap { after, .. } => {
            let probe = after.to_timestamp(local).ok()?;
            tz.following(probe).next().map(|t| t.timestamp())
        }
    }
}
