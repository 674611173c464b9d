//! The calendar's cases: `syntax` (expressions and zones), `occurrences` (instants worked out
//! by hand: office hours, daylight saving in Europe/Berlin, America/New_York and
//! Australia/Lord_Howe, rare and impossible days, Vixie's day rule) and `property` (against a
//! minute-by-minute scan). The helpers here are theirs.

mod occurrences;
mod property;
mod syntax;

use super::*;

fn cron(s: &str) -> Cron {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn zone(s: &str) -> Zone {
    Zone::named(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// The next occurrence, as RFC 3339 UTC.
fn next(expr: &str, z: &str, after: &str) -> Option<String> {
    next_after(&cron(expr), &zone(z), ts(after)).map(|t| t.to_string())
}

/// The next `n` occurrences, as RFC 3339 UTC.
fn all(expr: &str, z: &str, after: &str, n: usize) -> Vec<String> {
    upcoming(&cron(expr), &zone(z), ts(after), n)
        .into_iter()
        .map(|t| t.to_string())
        .collect()
}
