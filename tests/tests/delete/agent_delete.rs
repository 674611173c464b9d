//! Agent delete: the session ended, every snapshot deleted (over more than one page), a
//! tombstone left; and a delete whose holder died finished by the next one.

use super::*;

// ---------------------------------------------------------------------------------------------
// Agent delete

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_delete_ends_the_session_deletes_every_snapshot_and_leaves_a_tombstone() {
    let (store, world, _) = deployed_shared("agentdel", Duration::ZERO).await;
    let (agent_id, _) = world.asleep_agent("alice", "Hoarder");
    // More than one page (100) of snapshots, and a live session.
    world.more_snapshots("alice", &agent_id, 130);
    world.live_session("alice", &agent_id);
    let (bystander, bystander_snapshot) = world.asleep_agent("alice", "Bystander");
    assert_eq!(world.snapshots_of(&agent_id).len(), 131);
    assert_eq!(world.live_sessions_of(&agent_id), 1);
    let f = delete_fn(
        store.clone(),
        world.client(),
        delete_settings(&WakeSettings::default()),
    );

    let resp = f
        .handle(alices_request("DELETE", &agent_path(&agent_id)))
        .await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    assert!(
        world.snapshots_of(&agent_id).is_empty(),
        "every page deleted"
    );
    assert_eq!(world.live_sessions_of(&agent_id), 0);
    assert_eq!(world.snapshots_of(&bystander), vec![bystander_snapshot]);
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Gone);
    assert!(record.holder.is_none());
    let expires = record.expires_at.unwrap();
    let thirty_days = 30 * 24 * 3600;
    assert!((now_s() + thirty_days - 60..=now_s() + thirty_days).contains(&expires));

    // Repeating it answers 204 without touching AgentKit.
    let calls_before = world.sim.control().counters();
    let resp = f
        .handle(alices_request("DELETE", &agent_path(&agent_id)))
        .await;
    assert_eq!(resp.status().as_u16(), 204);
    assert_eq!(world.sim.control().counters().actions, calls_before.actions);
    // So does deleting one of its snapshots now.
    let resp = f
        .handle(alices_request(
            "DELETE",
            &snapshot_path(&agent_id, "snap-x"),
        ))
        .await;
    assert_eq!(resp.status().as_u16(), 204);

    // A late resume: 410, and no session.
    let r = resume_fn(store.clone(), world.client(), quick());
    let (status, body) = answer(
        &r.handle(alices_request("POST", &resume_path(&agent_id)))
            .await,
    );
    assert_eq!((status, body["code"].as_str()), (410, Some("AGENT_GONE")));
    let counters = world.sim.control().counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 0);
    assert_eq!(counters.live_sessions_of(&agent_id), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_whose_holder_died_is_finished_by_the_next_one() {
    let (store, world, _) = deployed_shared("takeover", Duration::ZERO).await;
    let (agent_id, snapshot) = world.asleep_agent("alice", "Orphaned");
    // A deleter acquired, then died: its lease has run out.
    hold(
        &store,
        &agent_id,
        WakeState::Deleting,
        "dead",
        now_ms() - 10_000,
    )
    .await;
    let f = delete_fn(store.clone(), world.client(), delete_settings(&quick()));
    let resp = f
        .handle(alices_request("DELETE", &agent_path(&agent_id)))
        .await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    assert!(world.sim.control().snapshot(&snapshot).is_none());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!((record.state, record.fence), (WakeState::Gone, 2));
}
