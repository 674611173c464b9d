//! Snapshot delete: 204 and 204 again (on DynamoDB and in memory), `If-Match` honoured, another
//! agent's snapshot not found and kept, and 409 during a live wake with the snapshot kept.

use super::*;

// ---------------------------------------------------------------------------------------------
// Snapshot delete

async fn snapshot_delete_is_idempotent<S: AgentStore + snapwake::store::ScheduleStore + Clone>(
    store: S,
) {
    let world = World::registered(Duration::ZERO, &store).await;
    let (agent_id, newest) = world.asleep_agent("alice", "Two snaps");
    let older = world.more_snapshots("alice", &agent_id, 1).remove(0);
    let f = delete_fn(store.clone(), world.client(), delete_settings(&quick()));

    let resp = f
        .handle(alices_request("DELETE", &snapshot_path(&agent_id, &newest)))
        .await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    assert!(
        world.sim.control().snapshot(&newest).is_none(),
        "deleted in AgentKit"
    );
    assert!(
        world.sim.control().snapshot(&older).is_some(),
        "only that one"
    );
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Asleep, "back to rest");
    assert!(record.holder.is_none());
    assert_eq!(record.description.owner.as_deref(), Some("alice"));

    // Again: already gone is success, and nothing else is touched.
    let resp = f
        .handle(alices_request("DELETE", &snapshot_path(&agent_id, &newest)))
        .await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    assert!(world.sim.control().snapshot(&older).is_some());
    assert_eq!(
        world
            .sim
            .control()
            .counters()
            .succeeded("DeleteSessionSnapshot"),
        1,
        "the repeat sent no second delete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_delete_answers_204_then_204_again_on_dynamodb() {
    snapshot_delete_is_idempotent(Arc::new(dynamo_store("snapdel").await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_delete_answers_204_then_204_again_in_memory() {
    snapshot_delete_is_idempotent(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_delete_honours_if_match() {
    let (store, world, _) = deployed_shared("ifmatch", Duration::ZERO).await;
    let (agent_id, newest) = world.asleep_agent("alice", "Versioned");
    let older = world.more_snapshots("alice", &agent_id, 1).remove(0);
    let f = delete_fn(store.clone(), world.client(), delete_settings(&quick()));
    let del = |snapshot: &str, etag: &str| {
        with_header(
            alices_request("DELETE", &snapshot_path(&agent_id, snapshot)),
            "if-match",
            etag,
        )
    };

    // No record yet: the agent is at version 0, so "3" is stale.
    let (status, body) = answer(&f.handle(del(&newest, "\"3\"")).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (412, Some("PRECONDITION_FAILED"))
    );
    let (status, _) = answer(&f.handle(del(&newest, "garbage")).await);
    assert_eq!(status, 412);
    assert!(
        world.sim.control().snapshot(&newest).is_some(),
        "412 deletes nothing"
    );

    let (status, body) = answer(&f.handle(del(&newest, "\"0\"")).await);
    assert_eq!(status, 204, "{body}");
    let version = store.get(&key(&agent_id)).await.unwrap().unwrap().version;
    assert!(version > 0);

    let (status, _) = answer(&f.handle(del(&older, &format!("\"{}\"", version + 1))).await);
    assert_eq!(status, 412);
    assert!(world.sim.control().snapshot(&older).is_some());
    let (status, body) = answer(&f.handle(del(&older, &format!("\"{version}\""))).await);
    assert_eq!(status, 204, "{body}");
    assert!(world.sim.control().snapshot(&older).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_agents_snapshot_is_not_found_and_kept() {
    let (store, world, _) = deployed_shared("foreign-snap", Duration::ZERO).await;
    let (mine, _) = world.asleep_agent("alice", "Mine");
    let (also_mine, its_snapshot) = world.asleep_agent("alice", "Also mine");
    let (_, bobs_snapshot) = world.asleep_agent("bob", "Bob's");
    let f = delete_fn(store.clone(), world.client(), delete_settings(&quick()));

    for foreign in [&its_snapshot, &bobs_snapshot] {
        let (status, body) = answer(
            &f.handle(alices_request("DELETE", &snapshot_path(&mine, foreign)))
                .await,
        );
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("SNAPSHOT_NOT_FOUND")),
            "{body}"
        );
        assert!(world.sim.control().snapshot(foreign).is_some(), "kept");
    }
    // Even an admin cannot delete it through the wrong agent.
    let (status, _) = answer(
        &f.handle(request(
            "DELETE",
            &snapshot_path(&mine, &bobs_snapshot),
            Who::Admin("root"),
            None,
        ))
        .await,
    );
    assert_eq!(status, 404);
    let (status, _) = answer(
        &f.handle(alices_request(
            "DELETE",
            &snapshot_path(&mine, "snap-never-was"),
        ))
        .await,
    );
    assert_eq!(status, 404);
    assert_eq!(world.snapshots_of(&also_mine), vec![its_snapshot]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_delete_during_a_live_wake_is_409_and_keeps_the_snapshot() {
    let (store, world, _) = deployed_shared("snapbusy", Duration::ZERO).await;
    let (agent_id, snapshot) = world.asleep_agent("alice", "Waking");
    hold_as_waking(&store, &agent_id).await;
    let f = delete_fn(store.clone(), world.client(), delete_settings(&quick()));

    for path in [snapshot_path(&agent_id, &snapshot), agent_path(&agent_id)] {
        let resp = f.handle(alices_request("DELETE", &path)).await;
        let (status, body) = answer(&resp);
        assert_eq!(
            (status, body["code"].as_str()),
            (409, Some("AGENT_BUSY")),
            "{path}"
        );
        let retry_after: u64 = resp.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=5).contains(&retry_after));
    }
    assert!(world.sim.control().snapshot(&snapshot).is_some(), "kept");
    assert_eq!(world.received("DeleteSessionSnapshot"), 0);
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.holder.as_deref()),
        (WakeState::Waking, Some("waker"))
    );
}
