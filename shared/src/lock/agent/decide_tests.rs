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
    r.session_expire_at = Some(crate::ambient::format_ms(NOW + 3_600_000));
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
    r.session_expire_at = Some(crate::ambient::format_ms(NOW - 1_000));
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
