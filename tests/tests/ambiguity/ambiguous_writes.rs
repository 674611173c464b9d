//! Part 1's tests: every write site of wake, delete, create and sleep made ambiguous once and on
//! every re-send, and the check that each site is recognised by its own write only.

use super::flows::*;
use super::write_sites::*;
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_writes_of_a_wake_never_double_a_resume() {
    run_sites(WAKES, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_writes_of_a_delete_never_lose_a_snapshot() {
    run_sites(DELETES, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_writes_of_a_create_make_one_session() {
    run_sites(CREATES, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_of_a_wake_ambiguous_on_every_resend_still_converge() {
    run_sites(WAKES, write_attempts()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_of_a_delete_ambiguous_on_every_resend_still_converge() {
    run_sites(DELETES, write_attempts()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_of_a_create_ambiguous_on_every_resend_still_converge() {
    run_sites(CREATES, write_attempts()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_writes_of_a_sleep_never_end_a_session_without_its_snapshot() {
    run_sites(SLEEPS, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_of_a_sleep_ambiguous_on_every_resend_still_converge() {
    run_sites(SLEEPS, write_attempts()).await;
}

#[test]
fn every_site_is_recognised_by_its_own_write_only() {
    // The predicates must not overlap on the writes of the same flow, or a row would test
    // another site than it names. Spot checks on the shapes of the writes.
    let held = Condition::Held {
        holder: "me".into(),
        fence: 1,
    };
    let record_session = Changes {
        session_id: Some(Some("s".into())),
        resume_sent_at_ms: Some(None),
        ..Changes::default()
    };
    assert!(session_recorded(&held, &record_session));
    assert!(!resume_sent(&held, &record_session) && !complete(&held, &record_session));
    let created = Changes {
        state: Some(WakeState::Awake),
        holder: Some(None),
        session_id: Some(Some("s".into())),
        ..Changes::default()
    };
    assert!(create_record(&held, &created) && !complete(&held, &created));
    assert!(!session_recorded(&held, &created) && !restore(&held, &created));
    let lease = Changes {
        poll_until_ms: Some(5),
        ..Changes::default()
    };
    assert!(poll_lease(&Condition::Version(3), &lease));
    assert!(!poll_lease(&held, &lease) && !verified(&Condition::Version(3), &lease));

    // A sleep: naming the snapshot, the holder's `asleep`, the bare release of an agent that
    // was asleep already, and `asleep` by anyone are told apart.
    let named = Changes {
        session_id: Some(Some("s".into())),
        snapshot_id: Some(Some("snap".into())),
        lease_until_ms: Some(9),
        ..Changes::default()
    };
    assert!(snapshot_named(&held, &named) && !asleep_by_holder(&held, &named));
    let asleep = Changes {
        state: Some(WakeState::Asleep),
        holder: Some(None),
        session_id: Some(None),
        error: Some(None),
        snapshots: Some(Vec::new()),
        ..Changes::default()
    };
    assert!(asleep_by_holder(&held, &asleep) && !snapshot_named(&held, &asleep));
    assert!(!asleep_by_anyone(&held, &asleep) && !restore(&held, &asleep));
    let sleeping_with = Condition::SleepingWith {
        fence: 1,
        snapshot_id: "snap".into(),
    };
    assert!(asleep_by_anyone(&sleeping_with, &asleep));
    assert!(!asleep_by_holder(&sleeping_with, &asleep));
    let already = Changes {
        error: None,
        snapshot_id: Some(Some("snap".into())),
        ..asleep
    };
    assert!(!asleep_by_holder(&held, &already));
    let failed = Changes {
        state: Some(WakeState::Awake),
        holder: Some(None),
        error: Some(Some("the snapshot ended Failed".into())),
        ..Changes::default()
    };
    assert!(sleep_failed_by_holder(&held, &failed));
    assert!(!sleep_failed_by_holder(&held, &created));
}
