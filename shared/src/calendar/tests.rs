//! The calendar's cases: syntax, Vixie's day rule, and daylight saving in Europe/Berlin and
//! America/New_York, each against instants worked out by hand; a property against a
//! minute-by-minute scan.

use proptest::prelude::*;

use super::*;

fn cron(s: &str) -> Cron {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn zone(s: &str) -> Zone {
    Zone::named(s).unwrap()
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn next(expr: &str, z: &str, after: &str) -> Option<String> {
    next_after(&cron(expr), &zone(z), ts(after)).map(|t| t.to_string())
}

fn all(expr: &str, z: &str, after: &str, n: usize) -> Vec<String> {
    upcoming(&cron(expr), &zone(z), ts(after), n)
        .into_iter()
        .map(|t| t.to_string())
        .collect()
}

#[test]
fn each_syntax_form_parses() {
    for ok in [
        "* * * * *",
        "30 8 * * MON-FRI",
        "0 19 * * mon-fri",
        "*/15 * * * *",
        "0 9-17/2 * * *",
        "5/20 * * * *",
        "0 0 1,15 * *",
        "0 0 * JAN,jul *",
        "0 0 * * 0",
        "0 0 * * 7",
        "0 0 * * 5-7",
        "  0   9  *  *  *  ",
    ] {
        cron(ok);
    }
    assert_eq!(cron("  0   9  *  *  *  ").to_string(), "0 9 * * *");
    // 0 and 7 are both Sunday.
    let sunday = DateTime::constant(2026, 12, 6, 9, 0, 0, 0);
    assert!(cron("0 9 * * 0").matches(sunday));
    assert!(cron("0 9 * * 7").matches(sunday));
    assert!(cron("0 9 * * SUN").matches(sunday));
    assert!(!cron("0 9 * * MON-FRI").matches(sunday));
    assert!(cron("0 9 * * 5-7").matches(sunday));
}

#[test]
fn every_error_names_its_field() {
    for (bad, want) in [
        ("0 25 * * *", "hour: 25 is out of range 0-23"),
        ("60 * * * *", "minute: 60 is out of range 0-59"),
        ("0 0 0 * *", "day-of-month: 0 is out of range 1-31"),
        ("0 0 * 13 *", "month: 13 is out of range 1-12"),
        ("0 0 * * 8", "day-of-week: 8 is out of range 0-7"),
        ("0 0 * * MOM", "day-of-week: unknown name \"MOM\""),
        ("0 0 * FOO *", "month: unknown name \"FOO\""),
        ("x 0 * * *", "minute: \"x\" is not a number"),
        ("*/0 * * * *", "minute: a step of 0"),
        ("0 17-9 * * *", "hour: range 17-9 runs backwards"),
        ("0 1,,2 * * *", "hour: an empty item in a list"),
        ("0 9 * *", "expected 5 fields"),
        ("0 0 9 * * *", "expected 5 fields"),
        ("@daily", "only five-field expressions"),
        ("", "expected 5 fields"),
    ] {
        let err = bad.parse::<Cron>().unwrap_err().to_string();
        assert!(err.contains(want), "{bad:?}: {err}");
    }
}

#[test]
fn zones_are_iana_names_only() {
    for ok in [
        "UTC",
        "Etc/UTC",
        "Europe/Berlin",
        "America/New_York",
        "Asia/Kolkata",
        "europe/berlin",
    ] {
        assert!(Zone::named(ok).is_ok(), "{ok}");
    }
    assert_eq!(zone("europe/berlin").name(), "Europe/Berlin");
    for bad in [
        "",
        " ",
        "+02:00",
        "CEST ",
        "Mars/Olympus",
        "Europe/ Berlin",
        "../etc/passwd",
        "UTC+2",
    ] {
        assert!(Zone::named(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn weekdays_at_half_past_eight_in_berlin() {
    // Friday 2026-12-04 (CET, +01:00): Friday's is past, the next is Monday's.
    assert_eq!(
        all(
            "30 8 * * MON-FRI",
            "Europe/Berlin",
            "2026-12-04T10:00:00Z",
            3
        ),
        [
            "2026-12-07T07:30:00Z",
            "2026-12-08T07:30:00Z",
            "2026-12-09T07:30:00Z"
        ]
    );
    // Strictly after: at the instant itself, the next day's.
    assert_eq!(
        next("30 8 * * MON-FRI", "Europe/Berlin", "2026-12-07T07:30:00Z").as_deref(),
        Some("2026-12-08T07:30:00Z")
    );
}

#[test]
fn berlin_spring_forward_fires_in_the_gap_at_the_transition() {
    // 2027-03-28 02:00 CET → 03:00 CEST (01:00Z). 02:30 does not exist.
    assert_eq!(
        all("30 2 * * *", "Europe/Berlin", "2027-03-27T00:00:00Z", 3),
        [
            "2027-03-27T01:30:00Z",
            "2027-03-28T01:00:00Z",
            "2027-03-29T00:30:00Z"
        ]
    );
    // Every 15 minutes through the gap: 01:45 CET, then 02:00-02:45 (none exist) fire once
    // together at 03:00 CEST, then 03:15 CEST.
    assert_eq!(
        all("*/15 * * * *", "Europe/Berlin", "2027-03-28T00:30:00Z", 4),
        [
            "2027-03-28T00:45:00Z",
            "2027-03-28T01:00:00Z",
            "2027-03-28T01:15:00Z",
            "2027-03-28T01:30:00Z"
        ]
    );
    // Unaffected times that day.
    assert_eq!(
        next("0 19 * * *", "Europe/Berlin", "2027-03-28T00:00:00Z").as_deref(),
        Some("2027-03-28T17:00:00Z")
    );
}

#[test]
fn berlin_fall_back_fires_once_in_the_fold() {
    // 2027-10-31 03:00 CEST → 02:00 CET: 02:30 happens at 00:30Z and 01:30Z; fires at the first.
    assert_eq!(
        all("30 2 * * *", "Europe/Berlin", "2027-10-30T12:00:00Z", 2),
        ["2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"]
    );
    // Half-hourly across the fold: each local time once (02:00 and 02:30 CEST only).
    assert_eq!(
        all("*/30 * * * *", "Europe/Berlin", "2027-10-30T23:45:00Z", 5),
        [
            "2027-10-31T00:00:00Z",
            "2027-10-31T00:30:00Z",
            "2027-10-31T02:00:00Z",
            "2027-10-31T02:30:00Z",
            "2027-10-31T03:00:00Z"
        ]
    );
}

#[test]
fn new_york_transitions() {
    // 2027-03-14 02:00 EST → 03:00 EDT (07:00Z).
    assert_eq!(
        all("30 2 * * *", "America/New_York", "2027-03-13T12:00:00Z", 2),
        ["2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z"]
    );
    // 2027-11-07 02:00 EDT → 01:00 EST: 01:30 happens at 05:30Z and 06:30Z; fires at 05:30Z.
    assert_eq!(
        all("30 1 * * *", "America/New_York", "2027-11-06T12:00:00Z", 2),
        ["2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"]
    );
    // Office hours keep their local time across the change.
    assert_eq!(
        all(
            "0 9 * * MON-FRI",
            "America/New_York",
            "2027-11-05T12:00:00Z",
            2
        ),
        ["2027-11-05T13:00:00Z", "2027-11-08T14:00:00Z"]
    );
}

#[test]
fn rare_and_impossible_days() {
    assert_eq!(next("0 0 31 2 *", "UTC", "2026-12-04T00:00:00Z"), None);
    assert_eq!(next("0 0 30 2 *", "UTC", "2026-12-04T00:00:00Z"), None);
    assert_eq!(
        next("0 0 29 2 *", "UTC", "2026-12-04T00:00:00Z").as_deref(),
        Some("2028-02-29T00:00:00Z")
    );
    // Vixie: both day fields restricted → either matches: every 13th and every Friday.
    assert_eq!(
        all("0 0 13 * FRI", "UTC", "2026-12-04T00:00:00Z", 3),
        [
            "2026-12-11T00:00:00Z",
            "2026-12-13T00:00:00Z",
            "2026-12-18T00:00:00Z"
        ]
    );
    // One of them given as `*…`: both must match. `*/1` is every day, so only Fridays.
    assert_eq!(
        next("0 0 13 * *", "UTC", "2026-12-04T00:00:00Z").as_deref(),
        Some("2026-12-13T00:00:00Z")
    );
    assert_eq!(
        next("0 0 */1 * FRI", "UTC", "2026-12-04T00:00:00Z").as_deref(),
        Some("2026-12-11T00:00:00Z")
    );
}

#[test]
fn lord_howe_shifts_by_half_an_hour() {
    // Australia/Lord_Howe: +10:30 standard, +11 summer, the change at 02:00 local on the first
    // Sunday of October (2027-10-03): 02:00-02:29 does not exist.
    assert_eq!(
        next("15 2 * * *", "Australia/Lord_Howe", "2027-10-02T12:00:00Z").as_deref(),
        Some("2027-10-02T15:30:00Z")
    );
}

/// Whether `t` is an occurrence: its local time matches, or it is a transition that a
/// matching local time in the gap before it maps onto.
fn is_occurrence(c: &Cron, z: &Zone, t: Timestamp) -> bool {
    let local = t.to_zoned(z.tz().clone()).datetime();
    if c.matches(local) {
        return true;
    }
    // A gap of up to 3 hours ending here.
    (1..=180).any(|m| {
        let earlier = local - jiff::Span::new().minutes(m);
        c.matches(earlier) && instant(z, earlier) == Some(t)
    })
}

fn expression() -> impl Strategy<Value = String> {
    let minute = prop_oneof![
        Just("*".to_string()),
        (0u8..60).prop_map(|m| m.to_string()),
        (1u8..31).prop_map(|s| format!("*/{s}"))
    ];
    let hour = prop_oneof![
        Just("*".to_string()),
        (0u8..24).prop_map(|h| h.to_string()),
        (0u8..12, 12u8..24).prop_map(|(a, b)| format!("{a}-{b}"))
    ];
    let weekday = prop_oneof![
        Just("*".to_string()),
        Just("MON-FRI".to_string()),
        (0u8..7).prop_map(|d| d.to_string())
    ];
    (minute, hour, weekday).prop_map(|(m, h, w)| format!("{m} {h} * * {w}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// The next occurrence is after the start, is an occurrence, and a minute-by-minute scan
    /// between the two finds none earlier.
    #[test]
    fn next_is_the_first_occurrence(
        expr in expression(),
        z in prop::sample::select(vec!["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]),
        start in 1_767_225_600i64..1_924_992_000i64,
    ) {
        let c = cron(&expr);
        let z = zone(z);
        let after = Timestamp::from_second(start).unwrap();
        let found = next_after(&c, &z, after).expect("fires at least weekly");
        prop_assert!(found > after);
        prop_assert!(is_occurrence(&c, &z, found), "{expr}: {found}");
        // No earlier occurrence: scan each minute between (at most 8 days).
        let mut t = Timestamp::from_second(start - start.rem_euclid(60) + 60).unwrap();
        while t < found {
            prop_assert!(!c.matches(t.to_zoned(z.tz().clone()).datetime()) || instant(&z, t.to_zoned(z.tz().clone()).datetime()) != Some(t),
                "{expr} in {}: {t} fires before {found}", z.name());
            t = t.checked_add(jiff::Span::new().minutes(1)).unwrap();
        }
    }
}
