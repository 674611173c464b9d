//! The lock's settings ([`LockSettings`]) and the wake protocol's timings ([`WakeSettings`]).

use std::time::Duration;

use crate::domain::{AgentRecord, OpenUrl};

/// What every user of the lock shares; wake, create, delete and deploy each have their own lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockSettings {
    pub lease: Duration,
    /// A lease counts as expired only this long after its end (docs/wake-protocol.md, "Leases").
    pub skew_margin: Duration,
    /// How many times a caller decides again after losing a CAS before it answers 409.
    pub max_rounds: u32,
    /// How many times an ambiguous fenced write is sent in all.
    pub write_attempts: u32,
}

impl Default for LockSettings {
    fn default() -> Self {
        LockSettings {
            lease: Duration::from_secs(60),
            skew_margin: Duration::from_secs(2),
            max_rounds: 5,
            write_attempts: 3,
        }
    }
}

impl LockSettings {
    pub fn lease_holds(&self, lease_until_ms: u64, now_ms: u64) -> bool {
        lease_until_ms.saturating_add(self.skew_margin.as_millis() as u64) >= now_ms
    }

    /// Whether a poll lease still holds. No skew margin: a poll lease only rations AgentKit calls,
    /// and two pollers cost one call more, never a wrong answer.
    pub fn poll_lease_holds(&self, poll_until_ms: u64, now_ms: u64) -> bool {
        poll_until_ms > now_ms
    }

    /// Whether `record` was written within `kept` of `now_ms`.
    pub fn written_within(record: &AgentRecord, kept: Duration, now_ms: u64) -> bool {
        !kept.is_zero()
            && record
                .updated_at
                .as_deref()
                .and_then(crate::timestamp::epoch_ms)
                .is_some_and(|written| now_ms <= written + kept.as_millis() as u64)
    }

    pub fn lease_is_live(&self, record: &AgentRecord, now_ms: u64) -> bool {
        self.lease_holds(record.lease_until_ms, now_ms)
    }

    /// Whether `record` is held by a live lease at `now_ms` (a state that holds the lock).
    pub fn is_held(&self, record: &AgentRecord, now_ms: u64) -> bool {
        record.state.is_held() && self.lease_is_live(record, now_ms)
    }

    /// Seconds a caller turned away by a live lease should wait before asking again.
    pub fn retry_after_s(&self, record: &AgentRecord, now_ms: u64) -> u64 {
        let left_ms = record.lease_until_ms.saturating_sub(now_ms);
        (left_ms / 1000).clamp(1, 5)
    }
}

/// Timings of the wakes and sleeps carried out under the lock. Defaults are the specification's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeSettings {
    /// The lock; its lease covers locating, reconciling and sending Resume.
    pub lock: LockSettings,
    /// Lease once a Resume was sent: a session's time to Ready (`SNAPWAKE_READY_TIMEOUT_S`).
    pub ready_timeout: Duration,
    /// The most a `Prefer: wait` may ask for (`SNAPWAKE_WAIT_S`, 0–20); without it, no wait.
    pub wait: Duration,
    /// AgentKit is asked every `poll_min` at first, backing off to `poll_max`.
    pub poll_min: Duration,
    pub poll_max: Duration,
    /// Joiners re-read the record from `watch_min`, backing off to `watch_max`.
    pub watch_min: Duration,
    pub watch_max: Duration,
    /// How long a poll lease (taken once the holder's request ended) lasts.
    pub poll_lease: Duration,
    /// An awake record verified within this is trusted without asking AgentKit: long enough for a
    /// storm's stragglers; short, as an ended session looks awake as long.
    pub verify_fresh: Duration,
    /// Lease of a sleep once its snapshot is taken: how long it may take to become Ready.
    pub snapshot_timeout: Duration,
    /// The longest `ttl_s` a keepalive may ask for (`SNAPWAKE_MAX_TTL_S`).
    pub max_ttl: Duration,
    /// Wait for an expired session's snapshot to be listed (`SNAPWAKE_SNAPSHOT_GRACE_S`).
    pub snapshot_grace: Duration,
    /// How long a snapshot may stay `Creating` before a wake fails (`SNAPWAKE_SNAPSHOT_TIMEOUT_S`).
    pub snapshot_stuck_after: Duration,
    /// The open link (`SNAPWAKE_OPEN_URL`) an awake agent's answer carries, if any.
    pub open_url: Option<OpenUrl>,
}

/// The shortest `ttl_s` a keepalive may ask for.
pub const MIN_TTL: Duration = Duration::from_secs(60);

impl Default for WakeSettings {
    fn default() -> Self {
        WakeSettings {
            lock: LockSettings::default(),
            ready_timeout: Duration::from_secs(360),
            wait: Duration::from_secs(20),
            poll_min: Duration::from_millis(250),
            poll_max: Duration::from_secs(2),
            watch_min: Duration::from_millis(250),
            watch_max: Duration::from_secs(1),
            poll_lease: Duration::from_secs(5),
            verify_fresh: Duration::from_secs(2),
            snapshot_timeout: Duration::from_secs(600),
            max_ttl: Duration::from_secs(28_800),
            snapshot_grace: Duration::from_secs(120),
            snapshot_stuck_after: Duration::from_secs(1800),
            open_url: None,
        }
    }
}

impl WakeSettings {
    /// The back-off of the holder waiting for a snapshot still being made.
    pub fn polling(&self) -> crate::invocation::Backoff {
        crate::invocation::Backoff::new(self.poll_min, self.poll_max)
    }

    /// How often a session booting is asked about, by whoever asks.
    pub fn pace(&self) -> crate::invocation::Pace {
        crate::invocation::Pace {
            min: self.poll_min,
            max: self.poll_max,
        }
    }

    /// The wait of one request: `asked` (a `Prefer: wait`), at most `SNAPWAKE_WAIT_S`.
    pub fn wait_for(&self, asked: Option<Duration>) -> Duration {
        asked.unwrap_or(Duration::ZERO).min(self.wait)
    }

    pub fn watching(&self) -> crate::invocation::Backoff {
        crate::invocation::Backoff::new(self.watch_min, self.watch_max)
    }
}
