//! Faults of the snapshot: one that cannot be taken, one that fails, and one slower than every
//! budget; the session is never ended without its snapshot.

use super::*;

// ---------------------------------------------------------------------------------------------
// Faults: the session is never ended without its snapshot

/// CreateSessionSnapshot refused (a 4xx: 502, not retryable) or failing (a 5xx whose snapshot
/// never shows up: 502 retryable): the session alive and the agent awake; the next sleep
/// succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_cannot_be_taken_leaves_the_agent_awake() {
    let (store, world, ctl) = deployed("sleep-refused", Duration::ZERO).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, session) = awake_agent(&world, &f, "Stubborn").await;

    for (status, code) in [(400, "InvalidParameter"), (500, "InternalError")] {
        ctl.inject(Fault::error(Some("CreateSessionSnapshot"), code, status).next(1))
            .unwrap();
        let (got, body) = post(&f, &agent_id, "sleep").await;
        assert_eq!(
            (got, body["code"].as_str(), body["retryable"].as_bool()),
            (502, Some("PROVIDER_ERROR"), Some(status >= 500)),
            "{body}"
        );
        assert!(
            ctl.session(&session).unwrap().is_active(),
            "the session lives on"
        );
        let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
        assert_eq!(record.state, WakeState::Awake, "{record:?}");
        assert_eq!(record.session_id.as_deref(), Some(session.as_str()));
        // Still awake to a resume, with the same session.
        let body = settle_and_check(&f, &agent_id, "resume", "resumed", false).await;
        assert_eq!(body["session"]["session_id"], session.as_str());
    }
    ctl.clear_faults();
    outcome_forgotten().await;
    settle_and_check(&f, &agent_id, "sleep", "slept", true).await;
    assert_eq!(received(&ctl, "DeleteSession"), 1);
}

/// A snapshot that ends `Failed` after `Creating`: 502 retryable to the sleeper and to the
/// callers that joined it, the session alive, the agent awake; then a good snapshot sleeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_fails_leaves_the_agent_awake_for_everyone_who_joined() {
    let (store, world, ctl) = deployed("sleep-failed", Duration::ZERO).await;
    let f = Arc::new(resume_fn(store.clone(), world.client(), quick_wake()));
    let (agent_id, session) = awake_agent(&world, &f, "Fragile").await;
    ctl.set_snapshot_outcome("Failed");
    ctl.set_snapshot_ready_delay(Duration::from_millis(400));

    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let f = f.clone();
            let agent_id = agent_id.clone();
            tokio::spawn(async move { settle(&f, &agent_id, "sleep").await })
        })
        .collect();
    for t in tasks {
        let (status, body, _) = t.await.unwrap();
        assert_eq!(
            (status, body["code"].as_str(), body["retryable"].as_bool()),
            (502, Some("PROVIDER_ERROR"), Some(true)),
            "{body}"
        );
    }
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(
        received(&ctl, "DeleteSession"),
        0,
        "never ended without its snapshot"
    );
    assert!(ctl.session(&session).unwrap().is_active());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Awake, "{record:?}");

    ctl.set_snapshot_outcome("Ready");
    outcome_forgotten().await;
    settle_and_check(&f, &agent_id, "sleep", "slept", true).await;
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 2);
}

/// A snapshot that never becomes Ready within the budgets: every call answers 202 (the
/// session alive, the agent `sleeping`), and a resume meanwhile answers 202 too — never an
/// error, never a second snapshot. Once it is Ready, the next call finishes the sleep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_slower_than_every_budget_is_continued_by_the_next_call() {
    let (store, world, ctl) = deployed("sleep-slow", Duration::ZERO).await;
    let wake = WakeSettings {
        wait: Duration::from_millis(2500),
        ..quick_wake()
    };
    let f = resume_fn(store.clone(), world.client(), wake);
    let (agent_id, session) = awake_agent(&world, &f, "Slow").await;
    ctl.set_snapshot_ready_delay(Duration::from_secs(3600));

    for _ in 0..2 {
        let (status, body) = post(&f, &agent_id, "sleep").await;
        assert_eq!(
            (status, body["state"].as_str()),
            (202, Some("sleeping")),
            "{body}"
        );
        let (status, body) = post(&f, &agent_id, "resume").await;
        assert_eq!(status, 202, "a resume waits for the sleep: {body}");
        assert!(
            ctl.session(&session).unwrap().is_active(),
            "the session lives on"
        );
    }
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(received(&ctl, "DeleteSession"), 0);

    ctl.advance(Duration::from_secs(3601));
    settle_and_check(&f, &agent_id, "sleep", "slept", true).await;
    assert!(!ctl.session(&session).is_some_and(|s| s.is_active()));
    assert_eq!(received(&ctl, "DeleteSession"), 1);
}
