//! The per-agent lock and the changes carried out under it (docs/wake-protocol.md): the one
//! place that says how the agent record is taken, written and given back. Wake, sleep,
//! create, delete (HTTP and the cleanup events) and the deploy lock all go through it; none
//! of them writes a lock field of its own.
//!
//! The record is a lease-based lock with a fence. Every write is conditional, of three kinds:
//!
//! - **acquire** ([`agent::AgentLock::acquire`]): a CAS on the version seen (or on absence)
//!   that sets a fresh holder token, `fence + 1` and a lease. A wake or a create also starts
//!   a **new generation** (the last wake's session, snapshot, expiry and error cleared), so
//!   nobody waits on an earlier wake's session. A lost CAS hands back the winner's record.
//! - **fenced** ([`agent::AgentLock::write`]): `holder = me AND fence = mine`. Idempotent
//!   under its fence, so an ambiguous one is sent again; a failed condition is checked
//!   against **the fields the write set** (holder and fence alone prove nothing).
//! - **by anyone** ([`agent::AgentLock::write_by_anyone`]): `state = waking AND fence = f AND
//!   session_id = s` (a sleep: its snapshot), so whoever sees the change done (or failed)
//!   settles it, and a dead holder never leaves an agent stuck until its lease runs out.
//!   Poll leases and a session found by a reconcile are CASes on the version seen.
//!
//! A lease counts as expired only once `lease_until_ms + skew margin < now`. There are no
//! heartbeats (Lambda freezes between invocations): a lease covers one invocation's work.
//! Every call goes through the caller's bounded store (`store::Within`), so a slow table
//! becomes an answer before API Gateway's 30 s, never a hang.
//!
//! Files: `mod.rs` (settings, [`decide`]), `agent.rs` (the lock on an agent record),
//! `driver.rs` (a wake or a sleep carried out under it), `document.rs` (the deploy and refresh
//! locks, on a store document).

use std::time::Duration;

use crate::domain::{AgentRecord, OpenUrl, WakeState};
use crate::store::Condition;

pub mod agent;
pub(crate) mod driver;
pub mod document;

pub use agent::{Acquire, Acquired, AgentLock, Generation, Held, Written};
pub use document::{DocumentAcquired, DocumentHold, DocumentLock};
pub use driver::Agents;

/// What every user of the lock shares: the lease it takes, the skew margin, and how hard it
/// tries. Wake, create, delete and deploy each carry their own copy with their own lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockSettings {
    /// The lease an acquire takes.
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
    /// Whether a lease ending at `lease_until_ms` still holds at `now_ms`.
    pub fn lease_holds(&self, lease_until_ms: u64, now_ms: u64) -> bool {
        lease_until_ms.saturating_add(self.skew_margin.as_millis() as u64) >= now_ms
    }

    /// Whether a poll lease ending at `poll_until_ms` still holds at `now_ms`. No skew margin:
    /// a poll lease only rations AgentKit calls (one poller at a time), and two pollers at
    /// once cost one call more, never a wrong answer (they complete or fail by anyone, under
    /// a condition). The margin would stretch a 250 ms pause between polls to 2.25 s.
    pub fn poll_lease_holds(&self, poll_until_ms: u64, now_ms: u64) -> bool {
        poll_until_ms > now_ms
    }

    /// Whether `record` was written within `kept` of `now_ms` (the outcome of a wake or a
    /// sleep that ended moments ago is the answer to the callers polling it).
    pub fn written_within(record: &AgentRecord, kept: Duration, now_ms: u64) -> bool {
        !kept.is_zero()
            && record
                .updated_at
                .as_deref()
                .and_then(crate::timestamp::epoch_ms)
                .is_some_and(|written| now_ms <= written + kept.as_millis() as u64)
    }

    /// Whether `record`'s lease still holds at `now_ms`.
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

/// Timings of the wake protocol: of wakes and sleeps, the two changes the driver carries out
/// under the lock (`driver`). Defaults are the specification's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeSettings {
    /// The lock; its lease covers locating, reconciling and sending Resume.
    pub lock: LockSettings,
    /// Lease once a Resume was sent or its SessionId recorded: how long a session may take to
    /// become Ready (`SNAPWAKE_READY_TIMEOUT_S`, default 360 s).
    pub ready_timeout: Duration,
    /// The most a `Prefer: wait` may ask a request to wait for readiness (`SNAPWAKE_WAIT_S`,
    /// 0–20, default 20 s); without it, a request waits for nothing ("Short requests").
    pub wait: Duration,
    /// AgentKit is asked about a session booting (or a snapshot being made) every `poll_min`
    /// at first, then less often, up to every `poll_max` ([`crate::deadline::Pace`]).
    pub poll_min: Duration,
    pub poll_max: Duration,
    /// Joiners re-read the record from `watch_min`, backing off to `watch_max`.
    pub watch_min: Duration,
    pub watch_max: Duration,
    /// How long a poll lease (taken once the holder's request ended) lasts.
    pub poll_lease: Duration,
    /// An awake record verified within this is trusted without asking AgentKit (2 s): long
    /// enough for a storm's stragglers, back one `Retry-After` after their last 202 (1 s cost a
    /// 500-caller storm three more GetSessions); short, as an ended session looks awake as long.
    pub verify_fresh: Duration,
    /// Lease of a sleep once its snapshot is taken: how long a snapshot may take to become
    /// Ready before another caller may take the sleep over (default 600 s).
    pub snapshot_timeout: Duration,
    /// The longest `ttl_s` a keepalive may ask for (`SNAPWAKE_MAX_TTL_S`, default 28800 s).
    pub max_ttl: Duration,
    /// How long after the agent's last session expired a wake waits for its snapshot to be
    /// listed at all (`SNAPWAKE_SNAPSHOT_GRACE_S`, default 120 s): AgentKit may list it late.
    pub snapshot_grace: Duration,
    /// How long a newest snapshot may stay `Creating` before a wake gives up on it with
    /// `SNAPSHOT_STUCK` (`SNAPWAKE_SNAPSHOT_TIMEOUT_S`, default 1800 s).
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
    pub fn polling(&self) -> crate::deadline::Backoff {
        crate::deadline::Backoff::new(self.poll_min, self.poll_max)
    }

    /// How often a session booting is asked about, by whoever asks.
    pub fn pace(&self) -> crate::deadline::Pace {
        crate::deadline::Pace {
            min: self.poll_min,
            max: self.poll_max,
        }
    }

    /// The wait of one request: `asked` (a `Prefer: wait`; none: no wait at all), at most
    /// `SNAPWAKE_WAIT_S`.
    pub fn wait_for(&self, asked: Option<Duration>) -> Duration {
        asked.unwrap_or(Duration::ZERO).min(self.wait)
    }

    /// The back-off of watching the record.
    pub fn watching(&self) -> crate::deadline::Backoff {
        crate::deadline::Backoff::new(self.watch_min, self.watch_max)
    }
}

/// What a caller wants of the agent, for [`decide`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// Ensure it is awake. An `awake` record verified within `verify_fresh` is trusted as it is.
    Wake { verify_fresh: Duration },
    /// Delete it, or one of its snapshots.
    Delete,
    /// Create it (or take over an earlier attempt at creating it).
    Create,
    /// Put it to sleep now.
    Sleep,
}

/// What the record says a caller may do, before any AgentKit call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Take the lock under this condition.
    Acquire(Condition),
    /// A tombstone: the agent was deleted.
    Gone,
    /// Another operation holds the agent (`state`); ask again in `retry_after_s`.
    Busy {
        state: WakeState,
        retry_after_s: u64,
    },
    /// A wake is in flight: wait on it rather than start another (wake only).
    Join,
    /// Awake, and its session was seen alive moments ago: answer from the record (wake only).
    Awake,
    /// Awake, not verified lately: check the recorded session once (wake only).
    Verify,
    /// Another caller is checking the awake record's session right now: watch the record for
    /// its verdict (wake only).
    AwaitVerify,
    /// A sleep holds the agent: a wake waits for it to settle, then decides again.
    AwaitSleep,
}

/// The pure decision of docs/wake-protocol.md, "A wake, step by step", for `intent` at `now_ms`.
///
/// A wake of an `awake` record: an expired session is asleep without asking AgentKit; one
/// verified within `verify_fresh` is trusted; else one caller checks it, and whoever finds a
/// check under way (a live poll lease) awaits its verdict.
pub fn decide(
    record: Option<&AgentRecord>,
    now_ms: u64,
    intent: Intent,
    settings: &LockSettings,
) -> Decision {
    let Some(r) = record else {
        return Decision::Acquire(Condition::Absent);
    };
    let cas = Decision::Acquire(Condition::Version(r.version));
    if r.state == WakeState::Gone {
        return Decision::Gone;
    }
    if settings.is_held(r, now_ms) {
        return match (intent, r.state) {
            (Intent::Wake { .. }, WakeState::Waking) => Decision::Join,
            (Intent::Wake { .. }, WakeState::Sleeping) => Decision::AwaitSleep,
            (Intent::Sleep, WakeState::Sleeping) => Decision::Join,
            (_, state) => Decision::Busy {
                state,
                retry_after_s: settings.retry_after_s(r, now_ms),
            },
        };
    }
    let Intent::Wake { verify_fresh } = intent else {
        return cas;
    };
    if r.state != WakeState::Awake || r.session_id.is_none() {
        return cas;
    }
    let expired = r
        .session_expire_at
        .as_deref()
        .and_then(crate::timestamp::epoch_ms)
        .is_some_and(|t| t <= now_ms);
    if expired {
        return cas;
    }
    if r.verified_at_ms > 0
        && r.verified_at_ms
            .saturating_add(verify_fresh.as_millis() as u64)
            >= now_ms
    {
        return Decision::Awake;
    }
    if settings.poll_lease_holds(r.poll_until_ms, now_ms) {
        return Decision::AwaitVerify;
    }
    Decision::Verify
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AgentKey, Kind};

    const NOW: u64 = 1_800_000_000_000;
    const WAKE: Intent = Intent::Wake {
        verify_fresh: Duration::from_secs(5),
    };

    fn record(state: WakeState) -> AgentRecord {
        let mut r = AgentRecord::absent(AgentKey::new(Kind::Codex, "studio-alice-01"));
        r.state = state;
        r.version = 7;
        r.fence = 3;
        r
    }

    fn s() -> LockSettings {
        LockSettings::default()
    }

    /// What `r` decides for `intent` at `NOW`.
    fn at(r: &AgentRecord, intent: Intent) -> Decision {
        decide(Some(r), NOW, intent, &s())
    }

    #[test]
    fn nothing_recorded_is_acquired_on_absence() {
        for intent in [WAKE, Intent::Delete, Intent::Create] {
            assert_eq!(
                decide(None, NOW, intent, &s()),
                Decision::Acquire(Condition::Absent)
            );
        }
    }

    #[test]
    fn a_tombstone_is_gone_for_everyone() {
        let r = record(WakeState::Gone);
        for intent in [WAKE, Intent::Delete, Intent::Create] {
            assert_eq!(at(&r, intent), Decision::Gone);
        }
    }

    #[test]
    fn a_live_lease_is_joined_by_wakes_and_refused_to_the_rest() {
        let mut r = record(WakeState::Waking);
        r.lease_until_ms = NOW + 10_000;
        assert_eq!(at(&r, WAKE), Decision::Join);
        assert_eq!(
            at(&r, Intent::Delete),
            Decision::Busy {
                state: WakeState::Waking,
                retry_after_s: 5
            }
        );
        for state in [WakeState::Deleting, WakeState::Creating] {
            r.state = state;
            for intent in [WAKE, Intent::Delete, Intent::Create] {
                assert!(matches!(
                    at(&r, intent),
                    Decision::Busy { state: st, .. } if st == state
                ));
            }
        }
    }

    #[test]
    fn a_lease_lives_until_the_skew_margin_has_passed() {
        let mut r = record(WakeState::Waking);
        r.lease_until_ms = NOW - 2_000;
        assert_eq!(at(&r, WAKE), Decision::Join);
        r.lease_until_ms = NOW - 2_001;
        assert_eq!(at(&r, WAKE), Decision::Acquire(Condition::Version(7)));
        assert_eq!(s().retry_after_s(&r, NOW), 1);
    }

    #[test]
    fn resting_states_are_acquired_by_version() {
        for state in [WakeState::Asleep, WakeState::Failed, WakeState::Awake] {
            let r = record(state);
            for intent in [Intent::Delete, Intent::Create] {
                assert_eq!(at(&r, intent), Decision::Acquire(Condition::Version(7)));
            }
        }
        // Awake with no session recorded: nothing to trust, wake it (the reconcile adopts
        // whatever is alive).
        let r = record(WakeState::Awake);
        assert_eq!(at(&r, WAKE), Decision::Acquire(Condition::Version(7)));
    }

    #[test]
    fn awake_records_are_trusted_checked_or_known_expired() {
        let mut r = record(WakeState::Awake);
        r.session_id = Some("s-1".into());
        r.session_expire_at = Some(crate::timestamp::format_ms(NOW + 3_600_000));
        r.verified_at_ms = NOW - 1_000;
        assert_eq!(at(&r, WAKE), Decision::Awake);
        // Verified too long ago: somebody checks once.
        r.verified_at_ms = NOW - 60_000;
        assert_eq!(at(&r, WAKE), Decision::Verify);
        // ...and whoever comes while that check runs waits for it.
        r.poll_until_ms = NOW + 3_000;
        assert_eq!(at(&r, WAKE), Decision::AwaitVerify);
        // A check that died is taken over once its lease has passed.
        r.poll_until_ms = NOW - 5_000;
        assert_eq!(at(&r, WAKE), Decision::Verify);
        // The session's own expiry has passed: asleep, without asking anybody.
        r.session_expire_at = Some(crate::timestamp::format_ms(NOW - 1_000));
        r.verified_at_ms = NOW - 1_000;
        assert_eq!(at(&r, WAKE), Decision::Acquire(Condition::Version(7)));
        // An unreadable expiry is no evidence either way.
        r.session_expire_at = Some("soon".into());
        assert_eq!(at(&r, WAKE), Decision::Awake);
    }

    #[test]
    fn a_sleep_is_joined_by_sleeps_awaited_by_wakes_and_refused_to_the_rest() {
        let mut r = record(WakeState::Sleeping);
        r.lease_until_ms = NOW + 10_000;
        assert_eq!(at(&r, Intent::Sleep), Decision::Join);
        assert_eq!(at(&r, WAKE), Decision::AwaitSleep);
        for intent in [Intent::Delete, Intent::Create] {
            assert!(matches!(
                at(&r, intent),
                Decision::Busy {
                    state: WakeState::Sleeping,
                    ..
                }
            ));
        }
        // A wake in flight refuses a sleep; an awake agent is put to sleep by a CAS.
        r.state = WakeState::Waking;
        assert!(matches!(at(&r, Intent::Sleep), Decision::Busy { .. }));
        let awake = record(WakeState::Awake);
        assert_eq!(
            at(&awake, Intent::Sleep),
            Decision::Acquire(Condition::Version(7))
        );
    }

    #[test]
    fn expired_leases_of_every_holding_state_are_taken_over() {
        for state in [
            WakeState::Waking,
            WakeState::Deleting,
            WakeState::Creating,
            WakeState::Sleeping,
        ] {
            let mut r = record(state);
            r.lease_until_ms = NOW - 60_000;
            for intent in [WAKE, Intent::Delete, Intent::Create, Intent::Sleep] {
                assert_eq!(
                    at(&r, intent),
                    Decision::Acquire(Condition::Version(7)),
                    "{state} {intent:?}"
                );
            }
        }
    }
}
