//! Sleeps interrupted or answered ambiguously: a holder that died after snapshotting or after
//! ending the session, a lapsed sleep, a lost snapshot answer, a session that expired first,
//! and a snapshot request applied late; the session is never ended without its snapshot.

use super::*;

/// The holder dies right after CreateSessionSnapshot acted (before it could name the
/// snapshot). Once its lease lapses the session may have done more work, so the next sleep
/// takes a snapshot of its own and ends the session on that one; the dead holder's snapshot is
/// one more for the retention sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_that_died_after_snapshotting_is_started_over() {
    let (store, world, ctl) = deployed_shared("sleep-crash-snap", Duration::ZERO).await;
    let wake = WakeSettings {
        lock: quick_lock(Duration::from_millis(800)),
        ..quick_wake()
    };
    let f = resume_fn(store.clone(), world.client(), wake.clone());
    let (agent_id, session) = awake_agent(&world, &f, "Crashy").await;
    let before = world.snapshots_of(&agent_id);

    let record = sleep_dying_after(&store, &world, &wake, &agent_id, "CreateSessionSnapshot").await;
    assert_eq!(record.state, WakeState::Sleeping);
    assert_eq!(
        record.snapshot_id, None,
        "it died before naming the snapshot"
    );
    assert!(ctl.session(&session).unwrap().is_active());
    let abandoned = new_snapshots(&world, &agent_id, &before);
    assert_eq!(abandoned.len(), 1);

    let body = settle_and_check(&f, &agent_id, "sleep", "slept", true).await;
    assert_eq!(
        received(&ctl, "CreateSessionSnapshot"),
        2,
        "a lapsed sleep starts over"
    );
    let taken = new_snapshots(&world, &agent_id, &before);
    assert_eq!(taken.len(), 2);
    let own = taken.iter().find(|s| !abandoned.contains(s)).unwrap();
    assert_eq!(body["snapshots"][0]["snapshot_id"], own.as_str(), "{body}");
    assert!(live_sessions(&ctl, &agent_id).is_empty());
}

/// A sleep whose lease lapsed while its snapshot was still `Creating`: the next sleep does not
/// adopt that snapshot (the session may have worked since it was asked for) but asks for a new
/// one, and ends the session only once *that* one is Ready — not when the old one is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_sleep_starts_over_with_a_new_snapshot() {
    let (store, world, ctl) = deployed("sleep-lapsed", Duration::ZERO).await;
    // A short snapshot lease (it still leaves a DeleteSession of the 2 s AgentKit timeout room
    // after two 2.5 s waits), so the first sleep's lease lapses within the test.
    let wake = WakeSettings {
        wait: Duration::from_millis(2500),
        snapshot_timeout: Duration::from_secs(10),
        ..quick_wake()
    };
    let f = resume_fn(store.clone(), world.client(), wake);
    let (agent_id, session) = awake_agent(&world, &f, "Lapsed").await;
    let before = world.snapshots_of(&agent_id);
    ctl.set_snapshot_ready_delay(Duration::from_secs(100));

    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (202, Some("sleeping")),
        "{body}"
    );
    let first = new_snapshots(&world, &agent_id, &before);
    assert_eq!(first.len(), 1);
    // The agent works on while the first sleep's lease (10 s from its short request) runs out.
    ctl.advance(Duration::from_secs(60));
    tokio::time::sleep(Duration::from_millis(10_500)).await;

    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (202, Some("sleeping")),
        "{body}"
    );
    assert_eq!(
        received(&ctl, "CreateSessionSnapshot"),
        2,
        "the lapsed sleep's snapshot is not adopted"
    );
    let second: Vec<String> = new_snapshots(&world, &agent_id, &before)
        .into_iter()
        .filter(|s| !first.contains(s))
        .collect();
    assert_eq!(second.len(), 1);
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.snapshot_id.as_ref(), Some(&second[0]));

    // The old snapshot is Ready, the new one not yet: the session lives on.
    ctl.advance(Duration::from_secs(50));
    assert_eq!(
        ctl.snapshot(&first[0]).unwrap().status.as_deref(),
        Some("Ready")
    );
    assert_ne!(
        ctl.snapshot(&second[0]).unwrap().status.as_deref(),
        Some("Ready")
    );
    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(received(&ctl, "DeleteSession"), 0);
    assert!(ctl.session(&session).unwrap().is_active());

    // Once the new one is Ready, the session ends on it.
    ctl.advance(Duration::from_secs(60));
    let body = settle_and_check(&f, &agent_id, "sleep", "slept", true).await;
    assert_eq!(received(&ctl, "DeleteSession"), 1);
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 2);
    assert_eq!(
        body["snapshots"][0]["snapshot_id"],
        second[0].as_str(),
        "{body}"
    );
    assert!(live_sessions(&ctl, &agent_id).is_empty());
}

/// The holder dies between DeleteSession and writing `asleep`: a resume finds the agent
/// `sleeping`, carries the sleep on once the holder's polling time is over (the snapshot is
/// Ready, the session already ended), then wakes it from the new snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_that_died_after_ending_the_session_is_finished_by_a_resume() {
    let (store, world, ctl) = deployed_shared("sleep-crash-end", Duration::ZERO).await;
    let wake = quick_wake();
    let f = resume_fn(store.clone(), world.client(), wake.clone());
    let (agent_id, _) = awake_agent(&world, &f, "Halfway").await;
    let before = world.snapshots_of(&agent_id);

    let record = sleep_dying_after(&store, &world, &wake, &agent_id, "DeleteSession").await;
    assert_eq!(record.state, WakeState::Sleeping);
    assert!(
        live_sessions(&ctl, &agent_id).is_empty(),
        "the session is ended"
    );

    settle_and_check(&f, &agent_id, "resume", "resumed", true).await;
    let new = new_snapshots(&world, &agent_id, &before);
    assert_eq!(new.len(), 1);
    assert_eq!(
        ctl.counters().resumes_of(&new[0]),
        1,
        "woken from the sleep's snapshot"
    );
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
}

/// CreateSessionSnapshot acts but its answer is lost (a 500 after applying): the holder finds
/// the snapshot it took by listing the session's snapshots, and the sleep completes with that
/// one snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_snapshot_answer_is_reconciled() {
    let (store, world, ctl) = deployed("sleep-lost", Duration::ZERO).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, _) = awake_agent(&world, &f, "Lossy").await;
    let before = world.snapshots_of(&agent_id);
    ctl.inject(
        Fault::error(Some("CreateSessionSnapshot"), "InternalError", 500)
            .next(1)
            .after_apply(),
    )
    .unwrap();

    settle_and_check(&f, &agent_id, "sleep", "slept", true).await;
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(new_snapshots(&world, &agent_id, &before).len(), 1);
    assert!(live_sessions(&ctl, &agent_id).is_empty());
}

/// The second day: the session expired on its own (AgentKit kept a snapshot) while the record
/// still says awake. A sleep finds no live session (200, `slept: false`, no snapshot taken),
/// and the next resume wakes the agent from the snapshot the expiry left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_after_the_session_expired_takes_no_snapshot() {
    let (store, world, ctl) = deployed("sleep-expired", Duration::ZERO).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, session) = awake_agent(&world, &f, "Overnight").await;
    let before = world.snapshots_of(&agent_id);

    ctl.advance(Duration::from_secs(8 * 3600 + 60));
    assert!(!ctl.session(&session).is_some_and(|s| s.is_active()));
    let expiry = new_snapshots(&world, &agent_id, &before);
    assert_eq!(expiry.len(), 1, "AgentKit kept a snapshot at expiry");

    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(false)),
        "{body}"
    );
    assert_eq!(body["state"], "asleep", "{body}");
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 0);
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!((record.state, record.session_id), (WakeState::Asleep, None));

    settle_and_check(&f, &agent_id, "resume", "resumed", true).await;
    assert_eq!(ctl.counters().resumes_of(&expiry[0]), 1);
}

/// A CreateSessionSnapshot whose answer was lost and which AgentKit would carry out a second
/// later (the simulator's `apply_after`): the sleep never ends the session before a Ready
/// snapshot of it exists, ends asleep, the late request comes to nothing, and the next wake
/// comes from a snapshot of that session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_request_applied_late_never_ends_the_session_first() {
    let (store, world, ctl) = deployed("sleep-late", Duration::ZERO).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, session) = awake_agent(&world, &f, "Late snapshot").await;
    let before = world.snapshots_of(&agent_id);
    ctl.inject(
        Fault::error(Some("CreateSessionSnapshot"), "InternalError", 500)
            .next(1)
            .apply_after(Duration::from_secs(1)),
    )
    .unwrap();

    // Retry as a client would, whatever the first answers say, until the agent is asleep.
    let until = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = post(&f, &agent_id, "sleep").await;
        // Whenever the session is gone, a Ready snapshot of it exists.
        if live_sessions(&ctl, &agent_id).is_empty() {
            let ready = ctl
                .snapshots()
                .into_iter()
                .any(|s| s.session_id.as_deref() == Some(session.as_str()) && s.is_wakeable());
            assert!(
                ready,
                "the session ended before a Ready snapshot of it: {body}"
            );
        }
        if status == 200 && body["slept"] == true {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "never asleep: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The lost request comes due after the session ended: AgentKit has nothing to snapshot,
    // and nothing comes back to life.
    ctl.advance(Duration::from_secs(2));
    assert!(live_sessions(&ctl, &agent_id).is_empty());
    assert_eq!(ctl.late_pending(), 0);
    let taken = new_snapshots(&world, &agent_id, &before);
    assert!(!taken.is_empty());

    let (status, body, _) = settle(&f, &agent_id, "resume").await;
    assert_eq!(status, 200, "{body}");
    let woken_from: Vec<String> = taken
        .iter()
        .filter(|id| ctl.counters().resumes_of(id) == 1)
        .cloned()
        .collect();
    assert_eq!(
        woken_from.len(),
        1,
        "woken from one of this sleep's snapshots: {taken:?}"
    );
}
