//! The per-agent lock (`snapwake::lock::AgentLock`) on each adapter: its ambiguous writes
//! decided by the fields they set, settling by anyone only the change watched, one poll lease
//! per version. A lost answer is a landed write whose answer a layer throws away
//! (`snapwake_tests::lost_answers`), as the network would.

use std::sync::atomic::Ordering;
use std::time::Duration;

use snapwake::invocation::Deadline;
use snapwake::lock::{Acquire, Acquired, AgentLock, Generation, Held, LockSettings, Written};
use snapwake::store::{ScheduleStore, Within};
use snapwake_tests::lost_answers::LostAnswers;

use crate::support::*;

/// The condition of completing, by anyone, the wake of `session_id` at `fence`.
fn waking(fence: u64, session_id: &str) -> Condition {
    Condition::WakingWith {
        fence,
        session_id: session_id.into(),
    }
}

/// The lock of `key` taken on its absence (the agent has no record yet).
async fn first_holder<S: AgentStore>(lock: &AgentLock<'_, S>, key: &AgentKey) -> Held {
    match lock.acquire(key, &Condition::Absent, None, &wake()).await {
        Ok(Acquired::Held(held)) => *held,
        other => panic!("a first acquire is held: {other:?}"),
    }
}

/// The lock of a test: its calls within 5 s.
fn lock_over<'a, S: AgentStore>(store: &'a S, settings: &'a LockSettings) -> AgentLock<'a, S> {
    AgentLock::new(
        Within::new(store, Deadline::after(Duration::from_secs(5))),
        settings,
    )
}

fn wake() -> Acquire {
    Acquire {
        state: WakeState::Waking,
        generation: Generation::New,
        lease: Duration::from_secs(60),
        describe: None,
        poll_until_ms: None,
    }
}

pub(crate) async fn lost_answers_are_resolved_by_the_fields_written<
    S: AgentStore + ScheduleStore + 'static,
>(
    store: Arc<S>,
) {
    // Every agent write the test arms (`lose_updates`) lands, then loses its answer.
    let store = LostAnswers::new(store, |_, _| true, 0);
    let settings = LockSettings::default();
    let lock = lock_over(&store, &settings);
    let key = AgentKey::new(Kind::Codex, "studio-alice-01");

    // The acquire lands, its answer is lost: the re-read shows our token.
    store.lose_updates.store(1, Ordering::SeqCst);
    let mut held = first_holder(&lock, &key).await;
    assert_eq!(held.fence(), 1);

    // A fenced write that keeps the holder lands twice (re-sent): still ours, recorded.
    store.lose_updates.store(1, Ordering::SeqCst);
    let record = Changes {
        session_id: Some(Some("s-1".into())),
        ..Changes::default()
    };
    let Written::Done(r) = lock.write(&mut held, record).await.unwrap() else {
        panic!("recorded")
    };
    assert_eq!(r.session_id.as_deref(), Some("s-1"));

    // A release whose answer is lost: the re-send fails its condition, and the record
    // shows the release, so it is done, not lost.
    store.lose_updates.store(1, Ordering::SeqCst);
    let done = lock
        .release(&mut held, WakeState::Asleep, Changes::default())
        .await
        .unwrap();
    assert!(matches!(done, Written::Done(ref r) if r.holder.is_none()));

    // A stale holder finds out it lost.
    let Acquired::Held(mut next) = lock
        .acquire(
            &key,
            &Condition::Version(held.record.version),
            Some(&held.record),
            &wake(),
        )
        .await
        .unwrap()
    else {
        panic!("acquired again")
    };
    assert_eq!(next.fence(), 2);
    assert!(next.before.as_ref().is_some_and(|b| b.session_id.is_some()));
    assert_eq!(next.record.session_id, None, "a new generation");
    let stale = lock
        .write(
            &mut held,
            Changes {
                state: Some(WakeState::Failed),
                ..Changes::default()
            },
        )
        .await
        .unwrap();
    assert!(matches!(stale, Written::Lost(Some(_))));
    let ok = lock
        .release(&mut next, WakeState::Asleep, Changes::default())
        .await
        .unwrap();
    assert!(matches!(ok, Written::Done(_)));
}

pub(crate) async fn anyone_settles_only_the_wake_it_watched<
    S: AgentStore + ScheduleStore + 'static,
>(
    store: Arc<S>,
) {
    let settings = LockSettings::default();
    let lock = lock_over(store.as_ref(), &settings);
    let key = AgentKey::new(Kind::Codex, "studio-alice-02");
    let mut held = first_holder(&lock, &key).await;
    let _ = lock
        .write(
            &mut held,
            Changes {
                session_id: Some(Some("s-1".into())),
                ..Changes::default()
            },
        )
        .await
        .unwrap();
    let awake = Changes {
        state: Some(WakeState::Awake),
        holder: Some(None),
        ..Changes::default()
    };
    // Another session, or another fence, is another wake.
    let other = lock
        .write_by_anyone(&key, &waking(held.fence(), "s-2"), awake.clone())
        .await
        .unwrap();
    assert!(matches!(other, Written::Lost(_)));
    let old = lock
        .write_by_anyone(&key, &waking(held.fence() - 1, "s-1"), awake.clone())
        .await
        .unwrap();
    assert!(matches!(old, Written::Lost(_)));
    let done = lock
        .write_by_anyone(&key, &waking(held.fence(), "s-1"), awake.clone())
        .await
        .unwrap();
    assert!(matches!(done, Written::Done(ref r) if r.state == WakeState::Awake));
    // Settling twice is the same outcome (the record shows it), not a loss.
    let again = lock
        .write_by_anyone(&key, &waking(held.fence(), "s-1"), awake)
        .await
        .unwrap();
    assert!(matches!(again, Written::Done(_)));
}

pub(crate) async fn one_poll_lease_per_version<S: AgentStore + ScheduleStore + 'static>(
    store: Arc<S>,
) {
    let settings = LockSettings::default();
    let lock = lock_over(store.as_ref(), &settings);
    let key = AgentKey::new(Kind::Codex, "studio-alice-03");
    let held = first_holder(&lock, &key).await;
    let seen = held.record.clone();
    let first = lock.take_poll_lease(&seen, 10).await.unwrap();
    assert!(matches!(first, Written::Done(ref r) if r.poll_until_ms == 10));
    let second = lock.take_poll_lease(&seen, 20).await.unwrap();
    assert!(matches!(second, Written::Lost(Some(ref r)) if r.poll_until_ms == 10));
}

/// Two callers taking the poll lease of one version until the same millisecond (a storm's
/// tasks woken together compute the same `now + lease`): one wins, the other is told it lost.
/// Before the `poller` token the loser read the winner's write as its own and both polled.
pub(crate) async fn a_poll_lease_taken_until_the_same_instant_has_one_winner<
    S: AgentStore + ScheduleStore + 'static,
>(
    store: Arc<S>,
) {
    let settings = LockSettings::default();
    let lock = lock_over(store.as_ref(), &settings);
    let key = AgentKey::new(Kind::Codex, "studio-alice-05");
    let held = first_holder(&lock, &key).await;
    let seen = held.record.clone();
    let first = lock.take_poll_lease(&seen, 10).await.unwrap();
    let second = lock.take_poll_lease(&seen, 10).await.unwrap();
    assert!(matches!(first, Written::Done(ref r) if r.poll_until_ms == 10));
    assert!(
        matches!(second, Written::Lost(Some(ref r)) if r.poll_until_ms == 10),
        "{second:?}"
    );
}

/// A take whose answer was lost is still recognised as its own (the record names its token).
pub(crate) async fn a_poll_lease_whose_answer_was_lost_is_still_taken<
    S: AgentStore + ScheduleStore + 'static,
>(
    store: Arc<S>,
) {
    // Every agent write the test arms (`lose_updates`) lands, then loses its answer.
    let store = LostAnswers::new(store, |_, _| true, 0);
    let settings = LockSettings::default();
    let lock = lock_over(&store, &settings);
    let key = AgentKey::new(Kind::Codex, "studio-alice-06");
    let held = first_holder(&lock, &key).await;
    let seen = held.record.clone();
    store.lose_updates.store(1, Ordering::SeqCst);
    let taken = lock.take_poll_lease(&seen, 10).await.unwrap();
    assert!(
        matches!(taken, Written::Done(ref r) if r.poll_until_ms == 10 && r.poller.is_some()),
        "{taken:?}"
    );
}
