//! How close occurrences come, in local time: one expression's to each other ([`shortest_gap`])
//! and two expressions' ([`shared_minute`]). An expression's times of day are the same on every
//! day it matches, so the answers come from its fields and which days match. Local time, not
//! instants: the rules a schedule keeps are about what a person wrote, not daylight saving.

use jiff::civil::{Date, DateTime};

use super::{Cron, HORIZON_DAYS};

const DAY: u32 = 24 * 60;

/// The shortest time between two occurrences of `cron` in local minutes, within a day or across
/// midnight on two matching days in a row; two days (2,880) when neither happens.
pub fn shortest_gap(cron: &Cron, from: Date) -> u32 {
    let times: Vec<u32> = cron
        .hours()
        .flat_map(|h| cron.minutes().map(move |m| h as u32 * 60 + m as u32))
        .collect();
    let within_a_day = times.windows(2).map(|w| w[1] - w[0]).min();
    let (Some(first), Some(last)) = (times.first(), times.last()) else {
        return 2 * DAY;
    };
    let two_in_a_row = days(from)
        .any(|d| cron.matches_date(d) && d.tomorrow().is_ok_and(|next| cron.matches_date(next)));
    let across_midnight = two_in_a_row.then_some(DAY - last + first);
    within_a_day
        .into_iter()
        .chain(across_midnight)
        .min()
        .unwrap_or(2 * DAY)
}

/// The first local minute, from `from`, at which both `a` and `b` fire (`None`: they never
/// fire in the same minute within the horizon).
pub fn shared_minute(a: &Cron, b: &Cron, from: Date) -> Option<DateTime> {
    let hour = a.hours().find(|h| b.hours().any(|o| o == *h))?;
    let minute = a.minutes().find(|m| b.minutes().any(|o| o == *m))?;
    days(from)
        .find(|d| a.matches_date(*d) && b.matches_date(*d))
        .map(|d| d.at(hour, minute, 0, 0))
}

/// The days of the horizon, from `date` on.
fn days(date: Date) -> impl Iterator<Item = Date> {
    date.series(jiff::ToSpan::days(1))
        .take(HORIZON_DAYS as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cron(s: &str) -> Cron {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    const FROM: Date = jiff::civil::date(2026, 12, 4);

    #[test]
    fn the_shortest_gap_comes_from_minutes_hours_and_midnight() {
        for (expr, minutes) in [
            ("* * * * *", 1),
            ("*/15 9-17 * * *", 15),
            ("0,45 8 * * *", 45),
            ("0 * * * *", 60),
            ("30 8-18 * * MON-FRI", 60),
            ("0 0,12 * * *", 12 * 60),
            // Across midnight, on days in a row only.
            ("0 0,23 * * *", 60),
            ("50 23 * * *", DAY),
            ("0 9 * * MON-FRI", DAY),
            ("0 9 * * MON", 2 * DAY),
            ("0 0,23 * * MON", 23 * 60),
            ("0 0 1 * *", 2 * DAY),
        ] {
            assert_eq!(shortest_gap(&cron(expr), FROM), minutes, "{expr}");
        }
    }

    #[test]
    fn two_expressions_share_a_minute_only_on_a_day_both_match() {
        let shared = |a: &str, b: &str| shared_minute(&cron(a), &cron(b), FROM);
        assert_eq!(
            shared("0 9 * * *", "0 9 * * *"),
            Some(jiff::civil::date(2026, 12, 4).at(9, 0, 0, 0))
        );
        assert!(shared("* * * * *", "* * * * *").is_some());
        assert!(shared("0 9 * * MON-FRI", "0 18 * * MON-FRI").is_none());
        assert!(shared("30 8 * * *", "0 8 * * *").is_none());
        // The same time of day on days that never coincide.
        assert!(shared("0 9 * * MON", "0 9 * * TUE").is_none());
        // ...and on days that do: 2026-12-07 is a Monday.
        assert_eq!(
            shared("0 9 * * MON", "0 9 7 * *"),
            Some(jiff::civil::date(2026, 12, 7).at(9, 0, 0, 0))
        );
        assert!(shared("*/2 * * * *", "1-59/2 * * * *").is_none());
    }
}
