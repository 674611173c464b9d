//! Timestamps as AgentKit writes them and snapwake stores them: RFC 3339 in UTC with whole
//! seconds (`2026-12-02T10:00:00Z`), parsed to be compared, never sorted as text.
//!
//! And the one wall clock every module reads ([`now_utc`]): the system's, except on a simulated
//! deployment's thread ([`simulate_from`]), so leases and ticks keep one simulated time
//! (docs/testing.md, "One simulated deployment").

use std::cell::Cell;

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

thread_local! {
    /// On a simulated thread: the epoch (ns) tokio's clock read as `.1`.
    static SIMULATED: Cell<Option<(i128, tokio::time::Instant)>> = const { Cell::new(None) };
}

/// Make this thread's wall clock tokio's, reading `at` now: with tokio's time paused, the
/// deployment runs on one time that moves only when everything waits. Call inside the runtime.
pub fn simulate_from(at: OffsetDateTime) {
    SIMULATED.with(|s| {
        s.set(Some((
            at.unix_timestamp_nanos(),
            tokio::time::Instant::now(),
        )))
    });
}

pub fn now_utc() -> OffsetDateTime {
    match SIMULATED.with(Cell::get) {
        None => OffsetDateTime::now_utc(),
        Some((epoch_ns, since)) => {
            let ns = epoch_ns + since.elapsed().as_nanos() as i128;
            OffsetDateTime::from_unix_timestamp_nanos(ns).unwrap_or(OffsetDateTime::UNIX_EPOCH)
        }
    }
}

/// `t` as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format(t: OffsetDateTime) -> String {
    let fmt = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    t.to_offset(UtcOffset::UTC).format(&fmt).unwrap_or_default()
}

pub fn now() -> String {
    format(now_utc())
}

/// Now, in epoch milliseconds. The store, the lock and every lease share this one clock.
pub fn now_ms() -> u64 {
    (now_utc().unix_timestamp_nanos() / 1_000_000) as u64
}

/// Now, in epoch seconds: what `expires_at` is compared with.
pub fn now_s() -> i64 {
    now_utc().unix_timestamp()
}

/// An RFC 3339 timestamp with any offset.
pub fn parse(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).ok()
}

/// An RFC 3339 timestamp as epoch milliseconds (`None`: unreadable, or before 1970).
pub fn epoch_ms(s: &str) -> Option<u64> {
    let ms = parse(s)?.unix_timestamp_nanos() / 1_000_000;
    u64::try_from(ms).ok()
}

/// Epoch milliseconds, formatted (whole seconds, as AgentKit writes them).
pub fn format_ms(ms: u64) -> String {
    let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format(t)
}

/// A key that orders optional timestamps in time; missing or unreadable ones come first.
pub fn sort_key(s: Option<&str>) -> i128 {
    s.and_then(parse)
        .map_or(i128::MIN, OffsetDateTime::unix_timestamp_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn formats_utc_whole_seconds_and_orders_by_time_not_text() {
        assert_eq!(
            format(datetime!(2026-12-02 10:00:00.75 +08:00)),
            "2026-12-02T02:00:00Z"
        );
        // Text order would put "…T09…+00:00" after "…T08…-02:00"; time order does not.
        let a = sort_key(Some("2026-12-02T09:00:00+00:00"));
        let b = sort_key(Some("2026-12-02T08:00:00-02:00"));
        assert!(a < b);
        assert!(sort_key(None) < a && sort_key(Some("soon")) == sort_key(None));
        assert_eq!(
            parse("2026-12-02T02:00:00Z"),
            Some(datetime!(2026-12-02 02:00:00 UTC))
        );
    }

    #[test]
    fn epoch_milliseconds_round_trip_to_the_second() {
        let ms = epoch_ms("2026-12-02T02:00:00+01:00").unwrap();
        assert_eq!(format_ms(ms), "2026-12-02T01:00:00Z");
        assert_eq!(format_ms(ms + 999), "2026-12-02T01:00:00Z");
        assert_eq!(epoch_ms("later"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_simulated_thread_keeps_tokio_s_time_from_the_instant_it_chose() {
        simulate_from(datetime!(2027-03-22 08:29:00 UTC));
        assert_eq!(now(), "2027-03-22T08:29:00Z");
        tokio::time::sleep(std::time::Duration::from_secs(90)).await;
        assert_eq!(now(), "2027-03-22T08:30:30Z");
        assert_eq!(now_s(), datetime!(2027-03-22 08:30:30 UTC).unix_timestamp());
        // Another thread keeps the system's clock.
        let elsewhere = std::thread::spawn(now_ms).join().unwrap();
        assert!(elsewhere > now_ms() + 365 * 86_400_000 || elsewhere + 86_400_000 < now_ms());
    }
}
