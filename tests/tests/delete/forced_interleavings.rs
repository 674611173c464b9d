//! The interleavings the races ([`super::races`]) hit only by chance, forced: a snapshot delete
//! while the holder lists, an agent delete failing part-way, a resume meeting an agent delete,
//! an agent delete meeting a wake, and an agent delete after a dead wake.

use super::*;

// ---------------------------------------------------------------------------------------------
// The interleaving the races above hit only by chance, forced

/// A resume lists the agent's snapshots only once it holds the lock, so the interleaving that
/// once let a wake resume a snapshot deleted after its listing cannot happen: a snapshot
/// delete arriving while the holder lists answers 409 and deletes nothing; once the wake is
/// done, the delete goes through and the agent stays awake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_delete_while_the_holder_lists_waits_for_the_wake() {
    let (store, world, _) = deployed_shared("stale-list", Duration::ZERO).await;
    let (agent_id, newest) = world.asleep_agent("alice", "Stale");
    let older = world.more_snapshots("alice", &agent_id, 1).remove(0);

    let gate = Arc::new(Gate::after(world.client(), "ListSessionSnapshots"));
    let resume = Arc::new(resume_fn(store.clone(), gate.clone(), quick()));
    let r = spawn_request(&resume, alices_request("POST", &resume_path(&agent_id)));
    tokio::time::timeout(Duration::from_secs(10), gate.reached.notified())
        .await
        .expect("the holder listed the snapshots");
    let held = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(held.state, WakeState::Waking, "it lists under the lock");

    let delete = delete_fn(store.clone(), world.client(), delete_settings(&quick()));
    let del = || alices_request("DELETE", &snapshot_path(&agent_id, &newest));
    let (status, body) = answer(&delete.handle(del()).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{body}"
    );
    assert!(
        world.sim.control().snapshot(&newest).is_some(),
        "nothing deleted under a wake"
    );
    gate.release.notify_one();

    let (status, body) = answer(&r.await.unwrap());
    assert_eq!(status, 200, "{body}");
    let woken = body["session"]["session_id"].as_str().unwrap().to_string();
    let counters = world.sim.control().counters();
    assert_eq!(
        counters.resumes_of(&newest),
        1,
        "woke from the newest snapshot"
    );
    assert_eq!(counters.resumes_of(&older), 0);

    let (status, body) = answer(&delete.handle(del()).await);
    assert_eq!(status, 204, "{body}");
    assert!(world.sim.control().snapshot(&newest).is_none());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        WakeState::Awake,
        "the delete handed the agent back awake"
    );
    assert_eq!(record.session_id.as_deref(), Some(woken.as_str()));
    assert_eq!(world.live_sessions_of(&agent_id), 1);
}

/// AgentKit failing part-way through an agent delete: the error is answered, the lock is
/// handed back (no 409 for a minute), and a retry finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_agent_delete_releases_the_agent_and_a_retry_finishes() {
    let (store, world, _) = deployed_shared("delfault", Duration::ZERO).await;
    let (agent_id, _) = world.asleep_agent("alice", "Flaky");
    world.more_snapshots("alice", &agent_id, 2);
    let ctl = world.sim.control();
    // Every attempt (the client retries twice) of the first snapshot deletion fails.
    ctl.inject(
        snapwake_sim::Fault::error(Some("DeleteSessionSnapshot"), "InternalError", 500).next(3),
    )
    .unwrap();
    let f = delete_fn(store.clone(), world.client(), delete_settings(&quick()));
    let (status, body) = answer(
        &f.handle(alices_request("DELETE", &agent_path(&agent_id)))
            .await,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (502, Some("PROVIDER_ERROR")),
        "{body}"
    );
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!((record.state, record.holder), (WakeState::Asleep, None));
    assert!(ctl.counters().faults_fired > 0);

    ctl.clear_faults();

    let (status, body) = answer(
        &f.handle(alices_request("DELETE", &agent_path(&agent_id)))
            .await,
    );
    assert_eq!(status, 204, "{body}");
    assert!(world.snapshots_of(&agent_id).is_empty());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Gone);
}

/// A delete caught holding the agent (it has deleted the first of the agent's snapshots): a
/// resume meanwhile answers 409 and sends no Resume; once the delete is done, a late resume
/// is 410 and nothing is left in AgentKit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_meeting_an_agent_delete_is_409_then_410() {
    let (store, world, _) = deployed_shared("delete-first", Duration::ZERO).await;
    let (agent_id, _) = world.asleep_agent("alice", "Doomed");
    world.more_snapshots("alice", &agent_id, 2);
    let gate = Arc::new(Gate::after(world.client(), "DeleteSessionSnapshot"));
    let delete = Arc::new(delete_fn(
        store.clone(),
        gate.clone(),
        delete_settings(&quick()),
    ));
    let d = spawn_request(&delete, alices_request("DELETE", &agent_path(&agent_id)));
    gate.reached().await;
    assert_eq!(
        store.get(&key(&agent_id)).await.unwrap().unwrap().state,
        WakeState::Deleting
    );

    let resume = resume_fn(store.clone(), world.client(), quick());
    let call = || alices_request("POST", &resume_path(&agent_id));
    let resp = resume.handle(call()).await;
    let (status, body) = answer(&resp);
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{body}"
    );
    assert!(resp.headers().contains_key("retry-after"));
    gate.release.notify_one();
    let (status, body) = answer(&d.await.unwrap());
    assert_eq!(status, 204, "{body}");

    let (status, body) = answer(&resume.handle(call()).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (410, Some("AGENT_GONE")),
        "{body}"
    );
    let counters = world.sim.control().counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 0);
    assert_eq!(counters.live_sessions_of(&agent_id), 0);
    assert!(world.snapshots_of(&agent_id).is_empty());
}

/// A wake caught holding the agent between a Resume AgentKit carried out and recording its
/// SessionId: an agent delete meanwhile answers 409 and deletes nothing; once the wake is
/// done, the delete ends the session, deletes the snapshots, and a late resume is 410.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_delete_meeting_a_wake_is_409_until_the_wake_is_done() {
    let (store, world, _) = deployed_shared("wake-first", Duration::from_millis(200)).await;
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Busy");
    let gate = Arc::new(Gate::after(world.client(), "ResumeSessionFromSnapshot"));
    let resume = Arc::new(resume_fn(store.clone(), gate.clone(), quick()));
    // Held until awake (`Prefer: wait`): the delete meets a wake whose caller waits.
    let wake = alices_request("POST", &resume_path(&agent_id));
    let r = spawn_request(&resume, prefer_wait(wake, 5));
    gate.reached().await;

    let delete = delete_fn(store.clone(), world.client(), delete_settings(&quick()));
    let call = || alices_request("DELETE", &agent_path(&agent_id));
    let (status, body) = answer(&delete.handle(call()).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{body}"
    );
    let ctl = world.sim.control();
    assert!(
        ctl.snapshot(&snapshot_id).is_some(),
        "nothing deleted under a wake"
    );
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1);
    gate.release.notify_one();
    let (status, body) = answer(&r.await.unwrap());
    assert_eq!(status, 200, "{body}");

    let (status, body) = answer(&delete.handle(call()).await);
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        ctl.counters().live_sessions_of(&agent_id),
        0,
        "the session ended"
    );
    assert!(world.snapshots_of(&agent_id).is_empty());
    let (status, _) = answer(
        &resume
            .handle(alices_request("POST", &resume_path(&agent_id)))
            .await,
    );
    assert_eq!(status, 410);
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 1);
}

/// A wake whose holder died after AgentKit carried out its Resume, before the SessionId was
/// recorded: a delete waits out the holder's lease (409), then takes the agent over and ends
/// the session no record names (found by UserSessionId). Nothing survives its 204.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_delete_after_a_dead_wake_ends_the_session_nobody_recorded() {
    let (store, world, _) = deployed_shared("dead-wake", Duration::ZERO).await;
    let (agent_id, _) = world.asleep_agent("alice", "Orphan");
    let gate = Arc::new(Gate::after(world.client(), "ResumeSessionFromSnapshot"));
    let resume = Arc::new(resume_fn(store.clone(), gate.clone(), quick()));
    let r = spawn_request(&resume, alices_request("POST", &resume_path(&agent_id)));
    gate.reached().await;
    r.abort();
    let _ = r.await;
    let held = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(held.state, WakeState::Waking);
    assert!(held.session_id.is_none() && held.resume_sent_at_ms.is_some());
    let ctl = world.sim.control();
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1);

    let delete = delete_fn(store.clone(), world.client(), delete_settings(&quick()));
    let call = || alices_request("DELETE", &agent_path(&agent_id));
    let (status, _) = answer(&delete.handle(call()).await);
    assert_eq!(status, 409, "the dead holder's lease still holds");
    let wait_ms = held.lease_until_ms.saturating_sub(now_ms()) + 400;
    tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    let (status, body) = answer(&delete.handle(call()).await);
    assert_eq!(status, 204, "{body}");
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 0);
    assert!(world.snapshots_of(&agent_id).is_empty());
    assert_eq!(
        store.get(&key(&agent_id)).await.unwrap().unwrap().state,
        WakeState::Gone
    );
}
