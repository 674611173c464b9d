//! Day after day: sleep, wake, sleep, wake, each sleep leaving one new Ready snapshot and each
//! wake from it; asleep agents stay asleep and temporary ones do not sleep.

use super::*;

// ---------------------------------------------------------------------------------------------
// Day after day: sleep, wake, sleep, wake

/// Three rounds: each sleep leaves exactly one new Ready snapshot and no live session (a
/// slow snapshot answers 202 first, then 200), and each resume wakes from that newest
/// snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleep_then_resume_three_times_over() {
    let (store, world, ctl) = deployed("sleep-cycle", Duration::from_millis(200)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let (agent_id, _) = awake_agent(&world, &f, "Data helper").await;

    // Round 2 takes longer than a request's wait (4 s): 202 first, continued by the next call.
    for (round, ready_after) in [(0, 300), (1, 5000), (2, 0)] {
        ctl.set_snapshot_ready_delay(Duration::from_millis(ready_after));
        let before = world.snapshots_of(&agent_id);
        let (status, body, accepted) = settle(&f, &agent_id, "sleep").await;
        assert_eq!(status, 200, "round {round}: {body}");
        assert_eq!(
            (body["state"].as_str(), body["slept"].as_bool()),
            (Some("asleep"), Some(true)),
            "{body}"
        );
        if ready_after > 4000 {
            assert!(
                accepted > 0,
                "a snapshot slower than the wait answers 202 first"
            );
        }
        let new = new_snapshots(&world, &agent_id, &before);
        assert_eq!(new.len(), 1, "round {round}: one new snapshot, not {new:?}");
        let snapshot = ctl.snapshot(&new[0]).unwrap();
        assert_eq!(snapshot.status.as_deref(), Some("Ready"));
        assert_eq!(snapshot.user_session_id.as_deref(), Some(agent_id.as_str()));
        assert!(live_sessions(&ctl, &agent_id).is_empty(), "no live session");
        assert_eq!(
            body["snapshots"][0]["snapshot_id"],
            new[0].as_str(),
            "{body}"
        );
        assert!(body["session"].is_null(), "{body}");
        let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
        assert_eq!(record.state, WakeState::Asleep);
        assert_eq!(record.session_id, None);
        assert_eq!(
            record.snapshots[0].snapshot_id, new[0],
            "the index knows it at once"
        );

        settle_and_check(&f, &agent_id, "resume", "resumed", true).await;
        assert_eq!(
            ctl.counters().resumes_of(&new[0]),
            1,
            "round {round}: woken from the snapshot the sleep took"
        );
        assert_eq!(live_sessions(&ctl, &agent_id).len(), 1);
    }
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 3);
    assert_eq!(received(&ctl, "ResumeSessionFromSnapshot"), 4);
}

/// An agent with no live session sleeps without a snapshot: 200, `slept: false`; a temporary
/// agent is 422 `NOT_SLEEPABLE`, its session untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asleep_agents_stay_asleep_and_temporary_ones_do_not_sleep() {
    let (store, world, ctl) = deployed("sleep-edges", Duration::ZERO).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());

    let (asleep, snapshot) = world.asleep_agent("alice", "Resting");
    let (status, body) = post(&f, &asleep, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(false)),
        "{body}"
    );
    assert_eq!(body["state"], "asleep", "{body}");
    assert_eq!(body["snapshots"][0]["snapshot_id"], snapshot.as_str());
    // Twice: the same.
    let (status, body) = post(&f, &asleep, "sleep").await;
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(false)),
        "{body}"
    );
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 0);

    // A temporary agent, awake on the temporary Tool.
    let temp = snapwake::identity::caller::mint("alice");
    let session = ctl
        .seed_session(snapwake_sim::SeedSession {
            tool_id: world.temporary.clone(),
            user_session_id: Some(temp.clone()),
            metadata: vec![snapwake::agentkit::types::MetadataEntry::string(
                "Username", "alice",
            )],
            ..Default::default()
        })
        .unwrap();
    let (status, body) = post(&f, &temp, "sleep").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("NOT_SLEEPABLE")),
        "{body}"
    );
    assert!(ctl.session(&session).unwrap().is_active());
    // Known to the record now: refused before any lock.
    let (status, _) = post(&f, &temp, "sleep").await;
    assert_eq!(status, 422);
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 0);
    let record = store.get(&key(&temp)).await.unwrap();
    assert!(
        record.is_none_or(|r| !r.state.is_held()),
        "no lock left behind"
    );
}
