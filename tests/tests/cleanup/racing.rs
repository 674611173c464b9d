//! A sweep meeting a wake or a delete that holds an agent.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn a_sweep_skips_an_agent_a_wake_or_a_delete_holds_and_prunes_it_later() {
    let (store, world, _) = deployed_shared("cleanup-race", Duration::ZERO).await;
    let fleet = seed_fleet(&world, &["alice", "bob"], 3, 6);
    let mut ids = fleet.keys().filter(|id| fleet[*id].owner == "alice");
    let waking = ids.next().unwrap().clone();
    let deleting = ids.next().unwrap().clone();

    // A wake caught after AgentKit resumed the agent, before it recorded the session.
    let gate = Arc::new(Gate::after(world.client(), "ResumeSessionFromSnapshot"));
    let resume = Arc::new(resume_fn(store.clone(), gate.clone(), quick_wake()));
    let r = spawn_request(
        &resume,
        alices_request("POST", &format!("/v1/agents/codex/{waking}/resume")),
    );
    gate.reached().await;
    let before = store.get(&codex(&waking)).await.unwrap().unwrap();
    assert_eq!(before.state, WakeState::Waking);
    // A delete holding another agent (as a snapshot delete in flight would).
    hold(
        &store,
        &deleting,
        WakeState::Deleting,
        "another-delete",
        now_ms() + 60_000,
    )
    .await;

    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());
    let report = sweep(&f, Duration::from_secs(60)).await;
    assert!(report.completed, "{report:?}");
    assert_eq!(report.counts.skipped, 2, "{report:?}");
    assert_eq!(report.counts.pruned, 3 * 4, "{report:?}");
    assert_eq!(report.counts.errors, 0, "{report:?}");
    for (agent_id, seeded) in &fleet {
        let want = if *agent_id == waking || *agent_id == deleting {
            seeded.all()
        } else {
            seeded.newest(3)
        };
        assert_eq!(held(&world, agent_id), want, "{agent_id}");
    }
    // The holders' records are as they left them.
    let during = store.get(&codex(&waking)).await.unwrap().unwrap();
    assert_eq!(
        (during.state, &during.holder, during.fence, during.version),
        (
            WakeState::Waking,
            &before.holder,
            before.fence,
            before.version
        )
    );
    let held_delete = store.get(&codex(&deleting)).await.unwrap().unwrap();
    assert_eq!(held_delete.holder.as_deref(), Some("another-delete"));

    // The wake finishes; the delete hands its agent back.
    gate.release.notify_one();
    let (status, body) = answer(&r.await.unwrap());
    assert_eq!(status, 200, "{body}");
    store
        .update(
            &codex(&deleting),
            &Condition::Version(held_delete.version),
            &given_back_asleep(),
        )
        .await
        .unwrap();

    let deletes = received(&world, "DeleteSessionSnapshot");
    let later = sweep(&f, Duration::from_secs(60)).await;
    assert!(later.completed, "{later:?}");
    assert_eq!(
        (
            later.counts.pruned,
            later.counts.skipped,
            later.counts.errors
        ),
        (6, 0, 0),
        "{later:?}"
    );
    assert_eq!(received(&world, "DeleteSessionSnapshot"), deletes + 6);
    for (agent_id, seeded) in &fleet {
        assert_eq!(held(&world, agent_id), seeded.newest(3), "{agent_id}");
    }
    // The woken agent is still awake on the session its wake recorded.
    let woken = store.get(&codex(&waking)).await.unwrap().unwrap();
    assert_eq!(woken.state, WakeState::Awake);
    assert!(woken.session_id.is_some(), "{woken:?}");
    assert_eq!(world.live_sessions_of(&waking), 1);
    assert_eq!(
        store.get(&codex(&deleting)).await.unwrap().unwrap().state,
        WakeState::Asleep
    );
}
