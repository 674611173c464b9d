//! The property: for random expressions that fire at least weekly, a few zones and random
//! instants of 2026-2030 (half of them within three hours of one of the zone's changes),
//! `next_after` is later than the start, is an occurrence by the definition, and a scan of
//! every minute in between finds no earlier one. The oracle reads the definition directly
//! (local readings minute by minute) and shares nothing with the code under test.

use jiff::tz::TimeZone;
use jiff::Span;
use proptest::prelude::*;

use super::*;

const ZONES: [&str; 5] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Asia/Kolkata",
    // +10:30 and +11:00: a half-hour gap and fold.
    "Australia/Lord_Howe",
];

fn minute() -> Span {
    Span::new().minutes(1)
}

/// Whether `t`, second 0 of a minute, is an occurrence: a matching local time read there for
/// the first time (a fold's second pass is a repeat), or the end of a gap some skipped
/// matching local time falls into.
fn fires_at(c: &Cron, tz: &TimeZone, t: Timestamp) -> bool {
    let here = tz.to_datetime(t);
    let mut skipped = tz.to_datetime(t - minute()) + minute();
    while skipped < here {
        if c.matches(skipped) {
            return true;
        }
        skipped += minute();
    }
    // These zones' folds are 30 or 60 minutes long.
    c.matches(here)
        && ![30, 60, 120]
            .iter()
            .any(|m| tz.to_datetime(t - Span::new().minutes(*m)) == here)
}

/// One field of up to `max` (from 0): every syntax form.
fn field(max: u8) -> impl Strategy<Value = String> {
    let half = max / 2;
    prop_oneof![
        Just("*".to_string()),
        (0..=max).prop_map(|n| n.to_string()),
        (1..=half).prop_map(|s| format!("*/{s}")),
        (0..half, half..=max).prop_map(|(a, b)| format!("{a}-{b}")),
        (0..half, half..=max, 1..=half).prop_map(|(a, b, s)| format!("{a}-{b}/{s}")),
        (0..=max, 1..=half).prop_map(|(a, s)| format!("{a}/{s}")),
        (0..=max, 0..=max).prop_map(|(a, b)| format!("{a},{b}")),
    ]
}

/// A day-of-week that is not `*…`, so names a day at least.
fn weekday() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u8..=7).prop_map(|d| d.to_string()),
        Just("MON-FRI".to_string()),
        Just("sat,SUN".to_string()),
        Just("mon,wed-fri".to_string()),
        Just("1-5/2".to_string()),
        Just("TUE/3".to_string()),
    ]
}

/// Expressions that fire at least once a week: the day fields are either `*` and anything,
/// or a restricted day-of-month with a restricted day-of-week (Vixie: either matches).
fn expression() -> impl Strategy<Value = String> {
    let days = prop_oneof![
        (
            Just("*".to_string()),
            prop_oneof![Just("*".to_string()), Just("*/2".to_string()), weekday()]
        ),
        (
            prop_oneof![
                (1u8..=31).prop_map(|d| d.to_string()),
                (1u8..=15, 16u8..=31).prop_map(|(a, b)| format!("{a}-{b}")),
                Just("1,15".to_string()),
            ],
            weekday(),
        ),
    ];
    (field(59), field(23), days).prop_map(|(m, h, (dom, dow))| format!("{m} {h} {dom} * {dow}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn next_is_the_first_occurrence(
        expr in expression(),
        zone_name in prop::sample::select(ZONES.to_vec()),
        // 2026-01-01 to 2030-12-31.
        base in 1_767_225_600i64..1_924_905_600i64,
        near_a_change in any::<bool>(),
        shift in -3 * 3600i64..3 * 3600,
        on_a_minute in any::<bool>(),
    ) {
        let c = cron(&expr);
        prop_assert_eq!(c.to_string().parse::<Cron>(), Ok(c.clone()));
        let z = zone(zone_name);
        let tz = z.tz();
        let mut after = Timestamp::from_second(base).unwrap();
        if near_a_change {
            if let Some(change) = tz.following(after).next() {
                after = change.timestamp();
            }
            after += Span::new().seconds(shift);
        }
        if on_a_minute {
            // Occurrences are on minutes: "strictly after" is tested where it bites.
            after = Timestamp::from_second(after.as_second().div_euclid(60) * 60).unwrap();
        }
        let found = next_after(&c, &z, after).expect("fires at least weekly");
        prop_assert!(found > after);
        prop_assert!(
            fires_at(&c, tz, found),
            "{} in {}: {} is no occurrence", expr, zone_name, found
        );
        // Every minute between, none of them an occurrence.
        let mut t = Timestamp::from_second(after.as_second().div_euclid(60) * 60).unwrap() + minute();
        while t < found {
            prop_assert!(
                !fires_at(&c, tz, t),
                "{} in {} after {}: {} fires before {}", expr, zone_name, after, t, found
            );
            t += minute();
        }
        // The ones after it ascend, each strictly after the one before.
        let next3 = upcoming(&c, &z, after, 3);
        prop_assert_eq!(next3.first(), Some(&found));
        prop_assert!(next3.windows(2).all(|w| w[0] < w[1]), "{:?}", next3);
    }
}
