//! The pure decision of docs/wake-protocol.md, "A wake, step by step", before any AgentKit call.

use std::time::Duration;

use super::settings::LockSettings;
use crate::domain::{AgentRecord, WakeState};
use crate::store::Condition;

/// What a caller wants of the agent, for [`decide`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intent {
    /// Ensure it is awake; an `awake` record verified within `verify_fresh` is trusted.
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
    /// Another caller is checking the awake record's session: await its verdict (wake only).
    AwaitVerify,
    /// A sleep holds the agent: a wake waits for it to settle, then decides again.
    AwaitSleep,
}

/// What `record` lets a caller with `intent` do at `now_ms`.
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
