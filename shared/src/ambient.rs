//! What every module reads from its surroundings rather than from its arguments, in one
//! place: the wall clock and fresh random ids. Both are the system's, except on a simulated
//! deployment's thread, whose clock is tokio's ([`simulate_from`]) and whose ids are drawn from
//! its seed ([`seed_this_thread`]), so a seed replays its run with leases and ticks on one time
//! (docs/testing.md, "One simulated deployment").
//!
//! Timestamps as AgentKit writes them and snapwake stores them: RFC 3339 in UTC with whole
//! seconds (`2026-12-02T10:00:00Z`), parsed to be compared, never sorted as text. Ids are v4
//! UUIDs; they decide order (keys list in order), which is why a seed must draw them.

use std::cell::{Cell, RefCell};
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

thread_local! {
    /// On a seeded thread: where its ids are drawn from.
    static SEEDED: RefCell<Option<fastrand::Rng>> = const { RefCell::new(None) };
}

/// From now on, the ids made on this thread are drawn from `seed`, and so are the retry
/// jitter's waits (fastrand's generator of this thread, `crate::agentkit::answer`).
pub fn seed_this_thread(seed: u64) {
    SEEDED.with(|s| *s.borrow_mut() = Some(fastrand::Rng::with_seed(seed)));
    fastrand::seed(seed.rotate_left(32) ^ 0x5eed_5eed);
}

pub fn fresh() -> uuid::Uuid {
    SEEDED.with(|s| match s.borrow_mut().as_mut() {
        Some(rng) => uuid::Builder::from_random_bytes(rng.u128(..).to_le_bytes()).into_uuid(),
        None => uuid::Uuid::new_v4(),
    })
}

/// A fresh v4 UUID as 32 lowercase hex characters.
pub fn fresh_hex() -> String {
    fresh().simple().to_string()
}

#[cfg(test)]
mod timestamp_tests;

#[cfg(test)]
mod id_tests;
