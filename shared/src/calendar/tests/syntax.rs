//! Parsing expressions and naming zones.

use super::*;

fn minutes(expr: &str) -> Vec<i8> {
    cron(expr).minutes().collect()
}

fn hours(expr: &str) -> Vec<i8> {
    cron(expr).hours().collect()
}

/// The days of 2026 an expression fires on, as "MM-DD".
fn days_2026(expr: &str) -> Vec<String> {
    let c = cron(expr);
    let mut day = jiff::civil::date(2026, 1, 1);
    let mut out = Vec::new();
    while day.year() == 2026 {
        if c.matches_date(day) {
            out.push(format!("{:02}-{:02}", day.month(), day.day()));
        }
        day = day.tomorrow().unwrap();
    }
    out
}

/// Whether two expressions fire at the same times (`==` also compares their text).
fn same(a: &str, b: &str) -> bool {
    minutes(a) == minutes(b) && hours(a) == hours(b) && days_2026(a) == days_2026(b)
}

#[test]
fn each_syntax_form_means_what_it_says() {
    assert_eq!(minutes("* * * * *").len(), 60);
    assert_eq!(hours("* * * * *").len(), 24);
    assert_eq!(minutes("7 * * * *"), [7]);
    assert_eq!(minutes("10-13 * * * *"), [10, 11, 12, 13]);
    assert_eq!(minutes("1,5,3 * * * *"), [1, 3, 5]);
    assert_eq!(minutes("*/15 * * * *"), [0, 15, 30, 45]);
    assert_eq!(hours("0 9-17/2 * * *"), [9, 11, 13, 15, 17]);
    // `a/n`: from a to the field's end.
    assert_eq!(minutes("5/20 * * * *"), [5, 25, 45]);
    assert_eq!(hours("0 20/2 * * *"), [20, 22]);
    // Items of every form in one list, overlapping.
    assert_eq!(
        minutes("0,10-12,*/20,58/1 * * * *"),
        [0, 10, 11, 12, 20, 40, 58, 59]
    );
    // A step wider than the field: only its start.
    assert_eq!(minutes("*/90 * * * *"), [0]);
    assert_eq!(minutes("*/4294967295 * * * *"), [0]);
    assert_eq!(days_2026("0 0 1,15 1 *"), ["01-01", "01-15"]);
    assert_eq!(days_2026("0 0 31 * *").len(), 7);
    assert_eq!(days_2026("0 0 1 */4 *"), ["01-01", "05-01", "09-01"]);
}

#[test]
fn names_are_case_insensitive_and_zero_and_seven_are_sunday() {
    assert!(same("0 0 * JAN,jul *", "0 0 * 1,7 *"));
    assert_eq!(days_2026("0 0 1 jan-MAR *"), ["01-01", "02-01", "03-01"]);
    assert_eq!(days_2026("0 0 1 Feb/5 *"), ["02-01", "07-01", "12-01"]);
    let sunday = jiff::civil::date(2026, 12, 6).at(9, 0, 0, 0);
    let monday = jiff::civil::date(2026, 12, 7).at(9, 0, 0, 0);
    for expr in [
        "0 9 * * 0",
        "0 9 * * 7",
        "0 9 * * SUN",
        "0 9 * * sun",
        "0 9 * * 5-7",
    ] {
        assert!(cron(expr).matches(sunday), "{expr}");
        assert!(!cron(expr).matches(monday), "{expr}");
    }
    assert!(!cron("0 9 * * MON-FRI").matches(sunday));
    assert!(cron("0 9 * * Mon-Fri").matches(monday));
    assert!(same("0 9 * * 0", "0 9 * * 7"));
    // `a/n` runs to 7, Sunday again: Friday, Saturday, Sunday.
    assert!(same("0 0 * * 5/1", "0 0 * * FRI,SAT,SUN"));
    assert!(!same("0 0 * * 5/1", "0 0 * * FRI,SAT"));
    // Seconds ignored.
    assert!(cron("0 9 * * SUN").matches(sunday + jiff::Span::new().seconds(59)));
}

#[test]
fn display_is_the_expression_with_single_spaces() {
    assert_eq!(cron("  0   9  *  *  *  ").to_string(), "0 9 * * *");
    assert_eq!(cron("30\t8 * *\n mon-fri").to_string(), "30 8 * * mon-fri");
    let c = cron("*/15 9-17 1,15 JAN-jun 1-5");
    assert_eq!(c.to_string().parse::<Cron>(), Ok(c));
}

#[test]
fn every_error_names_its_field() {
    for (bad, want) in [
        ("0 25 * * *", "hour: 25 is out of range 0-23"),
        ("60 * * * *", "minute: 60 is out of range 0-59"),
        ("0 0 0 * *", "day-of-month: 0 is out of range 1-31"),
        ("0 0 32 * *", "day-of-month: 32 is out of range 1-31"),
        ("0 0 * 13 *", "month: 13 is out of range 1-12"),
        ("0 0 * 0 *", "month: 0 is out of range 1-12"),
        ("0 0 * * 8", "day-of-week: 8 is out of range 0-7"),
        (
            "0 99999999999 * * *",
            "hour: 99999999999 is out of range 0-23",
        ),
        ("0 0 * * MOM", "day-of-week: unknown name \"MOM\""),
        ("0 0 * FOO *", "month: unknown name \"FOO\""),
        ("0 0 * * MONDAY", "day-of-week: unknown name \"MONDAY\""),
        ("x 0 * * *", "minute: \"x\" is not a number"),
        ("0 0 MON * *", "day-of-month: \"MON\" is not a number"),
        ("+5 * * * *", "minute: \"+5\" is not a number"),
        ("0 0 L * *", "day-of-month: \"L\" is not a number"),
        ("0 0 * * 5#3", "day-of-week: \"5#3\" is not a number"),
        ("*/0 * * * *", "minute: a step of 0"),
        ("0 */x * * *", "hour: step \"x\" is not a number"),
        ("0 1/ * * *", "hour: step \"\" is not a number"),
        ("0 17-9 * * *", "hour: range 17-9 runs backwards"),
        (
            "0 0 * * FRI-MON",
            "day-of-week: range FRI-MON runs backwards",
        ),
        ("0 1,,2 * * *", "hour: an empty item in a list"),
        ("0 0 1, * *", "day-of-month: an empty item in a list"),
        ("0 0 * 1- *", "month: a value is missing"),
        ("-5 * * * *", "minute: a value is missing"),
        (
            "0 9 * *",
            "expected 5 fields (minute hour day-of-month month day-of-week), got 4",
        ),
        (
            "0 0 9 * * *",
            "expected 5 fields (minute hour day-of-month month day-of-week), got 6",
        ),
        (
            "",
            "expected 5 fields (minute hour day-of-month month day-of-week), got 0",
        ),
        ("@daily", "\"@daily\": only five-field expressions"),
        ("@reboot", "only five-field expressions"),
    ] {
        let err = bad.parse::<Cron>().unwrap_err().to_string();
        assert!(err.contains(want), "{bad:?}: {err}");
        assert!(
            [
                "minute:",
                "hour:",
                "day-of-month:",
                "month:",
                "day-of-week:",
                "expected 5 fields",
                "\"@"
            ]
            .iter()
            .any(|field| err.starts_with(field)),
            "{bad:?}: {err} names no field"
        );
    }
}

#[test]
fn zones_are_iana_names_only() {
    for (ok, canonical) in [
        ("UTC", "UTC"),
        ("Etc/UTC", "Etc/UTC"),
        ("Europe/Berlin", "Europe/Berlin"),
        ("America/New_York", "America/New_York"),
        ("Asia/Kolkata", "Asia/Kolkata"),
        ("Australia/Lord_Howe", "Australia/Lord_Howe"),
        ("Etc/GMT+2", "Etc/GMT+2"),
        (
            "America/Argentina/ComodRivadavia",
            "America/Argentina/ComodRivadavia",
        ),
        // Case-insensitive, kept in the database's spelling.
        ("europe/berlin", "Europe/Berlin"),
        ("AMERICA/NEW_YORK", "America/New_York"),
        ("utc", "UTC"),
    ] {
        assert_eq!(zone(ok).name(), canonical, "{ok}");
    }
    for bad in [
        "",
        " ",
        "+02:00",
        "02:00",
        "CEST",
        "CET-1CEST",
        "Mars/Olympus",
        "Europe/Berlin ",
        " UTC",
        "Europe/ Berlin",
        "Europe/Berlin\n",
        "../etc/passwd",
        "/usr/share/zoneinfo/UTC",
        "UTC+2",
        "Local",
    ] {
        let err = Zone::named(bad).unwrap_err().to_string();
        assert!(err.contains("is not an IANA time zone"), "{bad:?}: {err}");
    }
    // A long input is quoted only in part.
    let long = "A".repeat(10_000);
    assert!(Zone::named(&long).unwrap_err().to_string().len() < 200);
}
