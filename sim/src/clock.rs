//! The simulated clock: the wall clock (`snapwake::ambient::now_utc`) plus an offset that
//! the control surface can move.
//!
//! Session and Tool lifecycles (readiness, expiry) read this clock, so a test can jump eight
//! hours ahead in a microsecond. The wall clock keeps running underneath, so delays of a few
//! hundred milliseconds also pass "by themselves" in a dev server. In a simulated deployment
//! (snapwake's `ambient::simulate_from`) the wall clock is the simulation's, which the
//! functions read too: one time for all. Signature freshness deliberately uses the system's
//! clock instead (see `server/auth.rs`), as a real service's check would.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use time::OffsetDateTime;

/// Wall clock + a signed offset in nanoseconds (±292 years, plenty).
#[derive(Debug, Default)]
pub(crate) struct Clock {
    offset_ns: AtomicI64,
}

impl Clock {
    /// The simulated now, in UTC.
    pub(crate) fn now(&self) -> OffsetDateTime {
        let offset = time::Duration::nanoseconds(self.offset_ns.load(Ordering::SeqCst));
        snapwake::ambient::now_utc() + offset
    }

    /// Move simulated time forward by `by`.
    pub(crate) fn advance(&self, by: Duration) {
        let ns = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX);
        // Saturating, so an absurd request cannot wrap time backwards.
        let _ = self
            .offset_ns
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |o| {
                Some(o.saturating_add(ns))
            });
    }

    /// Make simulated now equal `t` (it may move backwards; lifecycles already applied stay).
    pub(crate) fn set_now(&self, t: OffsetDateTime) {
        let diff = t - snapwake::ambient::now_utc();
        let ns = i64::try_from(diff.whole_nanoseconds()).unwrap_or(if diff.is_negative() {
            i64::MIN
        } else {
            i64::MAX
        });
        self.offset_ns.store(ns, Ordering::SeqCst);
    }
}

/// RFC 3339 UTC with whole seconds, e.g. `2026-12-02T10:00:00Z`, as AgentKit writes timestamps.
pub(crate) fn format_ts(t: OffsetDateTime) -> String {
    snapwake::ambient::format(t)
}

/// Parse an RFC 3339 timestamp (any offset).
pub(crate) fn parse_ts(s: &str) -> Option<OffsetDateTime> {
    snapwake::ambient::parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn advance_and_set_move_simulated_time() {
        let c = Clock::default();
        let before = c.now();
        c.advance(Duration::from_secs(3600));
        let after = c.now();
        assert!(after - before >= time::Duration::seconds(3600));
        assert!(after - before < time::Duration::seconds(3700));
        c.set_now(datetime!(2030-01-01 00:00:00 UTC));
        let n = c.now();
        assert!(n >= datetime!(2030-01-01 00:00:00 UTC));
        assert!(n < datetime!(2030-01-01 00:01:00 UTC));
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let t = datetime!(2026-12-02 10:00:00.5 +02:00);
        assert_eq!(format_ts(t), "2026-12-02T08:00:00Z");
        assert_eq!(
            parse_ts("2026-12-02T08:00:00Z"),
            Some(datetime!(2026-12-02 08:00:00 UTC))
        );
        assert_eq!(parse_ts("yesterday"), None);
    }
}
