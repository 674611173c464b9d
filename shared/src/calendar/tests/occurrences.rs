//! Occurrences against instants worked out by hand. Europe/Berlin is +01:00 (CET) and +02:00
//! (CEST); 2026 springs forward on Sunday 03-29 at 01:00Z (02:00 → 03:00) and falls back on
//! Sunday 10-25 at 01:00Z (03:00 → 02:00). America/New_York is -05:00 (EST) and -04:00 (EDT);
//! 2026 springs forward on Sunday 03-08 at 07:00Z (02:00 → 03:00) and falls back on Sunday
//! 11-01 at 06:00Z (02:00 → 01:00).

use super::*;

/// The occurrences in [from, to).
fn between(expr: &str, z: &str, from: &str, to: &str) -> Vec<Timestamp> {
    let to = ts(to);
    // One second before `from`, so an occurrence at `from` counts.
    let start = ts(from) - jiff::Span::new().seconds(1);
    upcoming(&cron(expr), &zone(z), start, 200)
        .into_iter()
        .filter(|t| *t < to)
        .collect()
}

#[test]
fn office_hours_in_berlin_skip_the_weekend_and_keep_their_local_time() {
    // From Friday 2026-03-20 noon: the next week's five (CET, 07:30Z), not Saturday or
    // Sunday, then Monday 03-30 after the change (CEST, 06:30Z).
    assert_eq!(
        all(
            "30 8 * * MON-FRI",
            "Europe/Berlin",
            "2026-03-20T12:00:00Z",
            6
        ),
        [
            "2026-03-23T07:30:00Z",
            "2026-03-24T07:30:00Z",
            "2026-03-25T07:30:00Z",
            "2026-03-26T07:30:00Z",
            "2026-03-27T07:30:00Z",
            "2026-03-30T06:30:00Z",
        ]
    );
    // Strictly after: at the instant itself, the next day's; a second before, that one.
    assert_eq!(
        next("30 8 * * MON-FRI", "Europe/Berlin", "2026-03-23T07:30:00Z").as_deref(),
        Some("2026-03-24T07:30:00Z")
    );
    assert_eq!(
        next("30 8 * * MON-FRI", "Europe/Berlin", "2026-03-23T07:29:59Z").as_deref(),
        Some("2026-03-23T07:30:00Z")
    );
    // The sleep side, across the autumn change: Friday 10-23 CEST, Monday 10-26 CET.
    assert_eq!(
        all(
            "0 19 * * MON-FRI",
            "Europe/Berlin",
            "2026-10-23T12:00:00Z",
            2
        ),
        ["2026-10-23T17:00:00Z", "2026-10-26T18:00:00Z"]
    );
}

#[test]
fn berlin_spring_forward() {
    // 02:30 does not exist on 03-29: it fires at the transition, 03:00 CEST.
    assert_eq!(
        all("30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", 3),
        [
            "2026-03-28T01:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z"
        ]
    );
    assert_eq!(
        next("30 2 * * *", "Europe/Berlin", "2026-03-29T00:59:59Z").as_deref(),
        Some("2026-03-29T01:00:00Z")
    );
    assert_eq!(
        next("30 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z").as_deref(),
        Some("2026-03-30T00:30:00Z")
    );
    // Four nonexistent times fire once together, at the transition.
    assert_eq!(
        all("*/15 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2),
        ["2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"]
    );
    // Half-hourly: 01:30 CET, then 02:00, 02:30 (gone) and 03:00 CEST together, 03:30 CEST.
    assert_eq!(
        all("*/30 * * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", 3),
        [
            "2026-03-29T00:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-29T01:30:00Z"
        ]
    );
    // The local day has 23 hours and 48 half-hour slots, three of them on one instant: 46.
    let day = between(
        "*/30 * * * *",
        "Europe/Berlin",
        "2026-03-28T23:00:00Z",
        "2026-03-29T22:00:00Z",
    );
    assert_eq!(day.len(), 46);
    assert_eq!(
        day.first().map(|t| t.to_string()).as_deref(),
        Some("2026-03-28T23:00:00Z")
    );
    assert_eq!(
        day.last().map(|t| t.to_string()).as_deref(),
        Some("2026-03-29T21:30:00Z")
    );
    // Evenings are unaffected: 19:00 CET, then 19:00 CEST.
    assert_eq!(
        all("0 19 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", 3),
        [
            "2026-03-28T18:00:00Z",
            "2026-03-29T17:00:00Z",
            "2026-03-30T17:00:00Z"
        ]
    );
}

#[test]
fn berlin_fall_back() {
    // 02:30 happens at 00:30Z (CEST) and 01:30Z (CET) on 10-25; it fires at the first only.
    assert_eq!(
        all("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2),
        ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]
    );
    assert_eq!(
        next("30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z").as_deref(),
        Some("2026-10-26T01:30:00Z")
    );
    // From inside the second pass: not again.
    assert_eq!(
        next("30 2 * * *", "Europe/Berlin", "2026-10-25T01:15:00Z").as_deref(),
        Some("2026-10-26T01:30:00Z")
    );
    // Half-hourly: 02:00 and 02:30 CEST, then 03:00 CET; the second 02:00 and 02:30 do not.
    assert_eq!(
        all("*/30 * * * *", "Europe/Berlin", "2026-10-24T23:45:00Z", 4),
        [
            "2026-10-25T00:00:00Z",
            "2026-10-25T00:30:00Z",
            "2026-10-25T02:00:00Z",
            "2026-10-25T02:30:00Z"
        ]
    );
    // The local day has 25 hours, and each of its 48 half-hour slots fires once.
    let day = between(
        "*/30 * * * *",
        "Europe/Berlin",
        "2026-10-24T22:00:00Z",
        "2026-10-25T23:00:00Z",
    );
    assert_eq!(day.len(), 48);
    assert_eq!(
        all("0 19 * * *", "Europe/Berlin", "2026-10-24T00:00:00Z", 3),
        [
            "2026-10-24T17:00:00Z",
            "2026-10-25T18:00:00Z",
            "2026-10-26T18:00:00Z"
        ]
    );
}

#[test]
fn new_york_spring_forward() {
    assert_eq!(
        all("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2),
        ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]
    );
    assert_eq!(
        all(
            "*/30 * * * *",
            "America/New_York",
            "2026-03-08T06:15:00Z",
            3
        ),
        [
            "2026-03-08T06:30:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-08T07:30:00Z"
        ]
    );
    let day = between(
        "*/30 * * * *",
        "America/New_York",
        "2026-03-08T05:00:00Z",
        "2026-03-09T04:00:00Z",
    );
    assert_eq!(day.len(), 46);
    // 19:00 EST is midnight UTC; 19:00 EDT is 23:00Z.
    assert_eq!(
        all("0 19 * * *", "America/New_York", "2026-03-07T00:00:00Z", 3),
        [
            "2026-03-08T00:00:00Z",
            "2026-03-08T23:00:00Z",
            "2026-03-09T23:00:00Z"
        ]
    );
}

#[test]
fn new_york_fall_back() {
    // 01:30 happens at 05:30Z (EDT) and 06:30Z (EST) on 11-01; it fires at 05:30Z.
    assert_eq!(
        all("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2),
        ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]
    );
    // Half-hourly: 01:00 and 01:30 EDT, then 02:00 EST; an hour and a half without one.
    assert_eq!(
        all(
            "*/30 * * * *",
            "America/New_York",
            "2026-11-01T04:45:00Z",
            4
        ),
        [
            "2026-11-01T05:00:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-01T07:00:00Z",
            "2026-11-01T07:30:00Z"
        ]
    );
    let day = between(
        "*/30 * * * *",
        "America/New_York",
        "2026-11-01T04:00:00Z",
        "2026-11-02T05:00:00Z",
    );
    assert_eq!(day.len(), 48);
    // Office hours keep their local time across the change.
    assert_eq!(
        all(
            "0 9 * * MON-FRI",
            "America/New_York",
            "2026-10-30T12:00:00Z",
            2
        ),
        ["2026-10-30T13:00:00Z", "2026-11-02T14:00:00Z"]
    );
}

#[test]
fn lord_howe_shifts_by_half_an_hour() {
    // Australia/Lord_Howe: +10:30 standard, +11:00 summer. On 2026-10-04 02:00 (15:30Z the day
    // before) becomes 02:30, so 02:15 fires at the transition.
    assert_eq!(
        all(
            "15 2 * * *",
            "Australia/Lord_Howe",
            "2026-10-03T00:00:00Z",
            2
        ),
        ["2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"]
    );
    // On 2026-04-05 02:00 (+11:00, 15:00Z) becomes 01:30 again: 01:45 fires once, at +11:00.
    assert_eq!(
        all(
            "45 1 * * *",
            "Australia/Lord_Howe",
            "2026-04-03T12:00:00Z",
            3
        ),
        [
            "2026-04-03T14:45:00Z",
            "2026-04-04T14:45:00Z",
            "2026-04-05T15:15:00Z"
        ]
    );
}

#[test]
fn zones_without_daylight_saving() {
    assert_eq!(
        all("30 8 * * *", "Asia/Kolkata", "2026-03-29T00:00:00Z", 2),
        ["2026-03-29T03:00:00Z", "2026-03-30T03:00:00Z"]
    );
    assert_eq!(
        all("0 0 1 1 *", "UTC", "2026-06-01T00:00:00Z", 2),
        ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"]
    );
}

#[test]
fn rare_and_impossible_days() {
    assert_eq!(next("0 0 31 2 *", "UTC", "2026-01-01T00:00:00Z"), None);
    assert_eq!(
        next("0 0 30 2 *", "Europe/Berlin", "2026-01-01T00:00:00Z"),
        None
    );
    assert_eq!(
        all("0 0 31 4,6,9,11 *", "UTC", "2026-01-01T00:00:00Z", 3),
        Vec::<String>::new()
    );
    assert_eq!(
        all("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", 2),
        ["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"]
    );
    // Local midnight in Berlin is 23:00Z the day before.
    assert_eq!(
        next("0 0 29 2 *", "Europe/Berlin", "2026-01-01T00:00:00Z").as_deref(),
        Some("2028-02-28T23:00:00Z")
    );
    // From the last leap day before 2100, which is none: eight years on.
    assert_eq!(
        next("0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z").as_deref(),
        Some("2104-02-29T00:00:00Z")
    );
    // Both day fields restricted, so either matches: every Monday of February, and the 29th.
    assert_eq!(
        all("0 0 29 2 1", "UTC", "2026-12-01T00:00:00Z", 5),
        [
            "2027-02-01T00:00:00Z",
            "2027-02-08T00:00:00Z",
            "2027-02-15T00:00:00Z",
            "2027-02-22T00:00:00Z",
            "2028-02-07T00:00:00Z",
        ]
    );
    // Day-of-week given as `*/7`, so both must match: a leap day on a Sunday (2032, then
    // 2060), found within the horizon and then not.
    assert_eq!(
        next("0 0 29 2 */7", "UTC", "2026-01-01T00:00:00Z").as_deref(),
        Some("2032-02-29T00:00:00Z")
    );
    assert_eq!(next("0 0 29 2 */7", "UTC", "2032-03-01T00:00:00Z"), None);
}

#[test]
fn vixie_either_day_rule() {
    // `0 0 13 * FRI`: every 13th and every Friday (2026-02-13 and 2026-03-13 are both).
    assert_eq!(
        all("0 0 13 * FRI", "UTC", "2026-02-01T00:00:00Z", 12),
        [
            "2026-02-06T00:00:00Z",
            "2026-02-13T00:00:00Z",
            "2026-02-20T00:00:00Z",
            "2026-02-27T00:00:00Z",
            "2026-03-06T00:00:00Z",
            "2026-03-13T00:00:00Z",
            "2026-03-20T00:00:00Z",
            "2026-03-27T00:00:00Z",
            "2026-04-03T00:00:00Z",
            "2026-04-10T00:00:00Z",
            "2026-04-13T00:00:00Z",
            "2026-04-17T00:00:00Z",
        ]
    );
    // One of them starting with `*`: both must match. `*` day-of-week: the 13ths only.
    assert_eq!(
        all("0 0 13 * *", "UTC", "2026-02-01T00:00:00Z", 2),
        ["2026-02-13T00:00:00Z", "2026-03-13T00:00:00Z"]
    );
    // `*/1` is every day but starts with `*`: Fridays only.
    assert_eq!(
        all("0 0 */1 * FRI", "UTC", "2026-02-01T00:00:00Z", 2),
        ["2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z"]
    );
    // `*/2` day-of-week with the 13th: a 13th on Sunday, Tuesday, Thursday or Saturday.
    assert_eq!(
        all("0 0 13 * */2", "UTC", "2026-01-01T00:00:00Z", 2),
        ["2026-01-13T00:00:00Z", "2026-06-13T00:00:00Z"]
    );
}
