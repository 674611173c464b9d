//! Offboarding that never gives up and comes only from whom it should: an agent held when the
//! event arrives is recorded as left and deleted by the next sweep, a wake of the leaving
//! owner's agents answers 410 meanwhile, and an event from a source not configured deletes
//! nothing.

use super::*;

/// An offboarding event of `owner` from `source`, as EventBridge delivers it.
fn offboarded(owner: &str, source: &str) -> Value {
    let mut event = fixture("owner-offboarded.json");
    event["detail"]["owner"] = Value::from(owner);
    event["source"] = Value::from(source);
    event
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_agent_at_offboarding_time_is_deleted_by_the_next_sweep() {
    let (store, world, _) = deployed("offboard-held", Duration::ZERO).await;
    let (free, _) = world.asleep_agent("alice", "Free");
    let (held_id, _) = world.asleep_agent("alice", "Held");
    let (bobs, _) = world.asleep_agent("bob", "Bob's");
    // A wake holds one of alice's agents (its lease runs a minute).
    let held_key = codex(&held_id);
    hold(
        &store,
        &held_id,
        WakeState::Waking,
        "a-wake",
        now_ms() + 60_000,
    )
    .await;
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());

    let report = f
        .invoke(offboarded("alice", OFFBOARDING_SOURCE), context(60_000))
        .await
        .expect("a held agent is recorded, not a failed event");
    assert_eq!(report["deleted"], 1, "{report}");
    assert_eq!(report["left"], 1, "{report}");
    assert!(world.snapshots_of(&free).is_empty());
    assert!(!world.snapshots_of(&held_id).is_empty(), "held: untouched");
    let progress = snapwake::offboarding::progress(&store, "alice")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(progress.left, vec![held_key.clone()]);
    assert!(!progress.is_finished());
    assert_eq!(
        snapwake::offboarding::pending(&store).await.unwrap(),
        vec!["alice".to_string()]
    );

    // Meanwhile nothing of alice's is woken: 410, no Resume.
    let api = Api::new(store.clone(), world.client(), identity());
    world.sim.control().reset_counters();
    let wake = alices_request("POST", &format!("/v1/agents/codex/{free}/resume"));
    assert_eq!(answer(&api.handle(wake).await).0, 410);
    // bob is not affected.
    let wake = request(
        "POST",
        &format!("/v1/agents/codex/{bobs}/resume"),
        Who::User("bob"),
        None,
    );
    let (status, body) = answer(&api.handle(wake).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(received(&world, "ResumeSessionFromSnapshot"), 1);

    // The wake lets go (its lease ends); the next sweep finishes the offboarding.
    let holding = store.get(&held_key).await.unwrap().unwrap();
    store
        .update(
            &held_key,
            &Condition::Held {
                holder: "a-wake".into(),
                fence: holding.fence,
            },
            &given_back_asleep(),
        )
        .await
        .unwrap();
    let swept = sweep(&f).await;
    assert_eq!(swept["offboarding"]["deleted"], 1, "{swept}");
    // Nothing is left, but a request admitted just before the offboarding may still be
    // writing its agent's record (ADMITTED_FOR): not finished before a listing after that.
    assert_eq!(swept["offboarding"]["finished"], 0, "{swept}");
    assert_eq!(swept["offboarding"]["left"], 0, "{swept}");
    age_offboarding(&store, "alice").await;
    let swept = sweep(&f).await;
    assert_eq!(swept["offboarding"]["deleted"], 0, "{swept}");
    assert_eq!(swept["offboarding"]["finished"], 1, "{swept}");
    assert!(world.snapshots_of(&held_id).is_empty());
    let record = store.get(&held_key).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Gone);
    let progress = snapwake::offboarding::progress(&store, "alice")
        .await
        .unwrap()
        .unwrap();
    assert!(
        progress.is_finished() && progress.left.is_empty(),
        "{progress:?}"
    );
    assert!(snapwake::offboarding::pending(&store)
        .await
        .unwrap()
        .is_empty());
    assert!(!world.snapshots_of(&bobs).is_empty(), "bob keeps his");

    // A finished offboarding refuses nothing: alice may come back and wake new agents.
    let (again, _) = world.asleep_agent("alice", "Back again");
    let wake = alices_request("POST", &format!("/v1/agents/codex/{again}/resume"));
    let (status, body) = answer(&api.handle(wake).await);
    assert_eq!(status, 200, "{body}");
}

/// Seam 1 of docs/testing.md: AgentKit answering 5xx to its listings while bob's offboarding
/// event is handled. The run found nothing, so it must not be finished by a later run that
/// only retries what was left (nothing): the next sweep, once the listings answer, lists again
/// and deletes bob's agent, and it never wakes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offboarding_whose_listings_failed_lists_again_before_it_is_finished() {
    let (store, world, _) = deployed("offboard-listing-failed", Duration::ZERO).await;
    let (bobs, _) = world.asleep_agent("bob", "Bob's");
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());
    let ctl = world.sim.control();
    for action in ["ListSessions", "ListSessionSnapshots"] {
        ctl.inject(Fault::error(Some(action), "InternalError", 500))
            .unwrap();
    }
    // Failed or not, the run must leave the offboarding pending.
    let handled = f
        .invoke(offboarded("bob", OFFBOARDING_SOURCE), context(60_000))
        .await;
    let progress = snapwake::offboarding::progress(&store, "bob")
        .await
        .unwrap()
        .expect("the offboarding is recorded before anything is listed");
    assert!(!progress.is_finished(), "{handled:?} {progress:?}");
    assert_eq!(
        snapwake::offboarding::pending(&store).await.unwrap(),
        vec!["bob".to_string()]
    );
    assert!(!world.snapshots_of(&bobs).is_empty(), "nothing was found");

    // The listings answer again; the next sweep (late enough) finds the agent and deletes it.
    ctl.clear_faults();
    age_offboarding(&store, "bob").await;
    let swept = sweep(&f).await;
    assert_eq!(swept["offboarding"]["deleted"], 1, "{swept}");
    assert_eq!(swept["offboarding"]["finished"], 1, "{swept}");
    assert!(world.snapshots_of(&bobs).is_empty());

    // bob's agent does not wake: no Resume is sent.
    let api = Api::new(store.clone(), world.client(), identity());
    ctl.reset_counters();
    let wake = request(
        "POST",
        &format!("/v1/agents/codex/{bobs}/resume"),
        Who::User("bob"),
        None,
    );
    let (status, body) = answer(&api.handle(wake).await);
    assert!(status == 404 || status == 410, "{status} {body}");
    assert_eq!(received(&world, "ResumeSessionFromSnapshot"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offboarding_event_from_another_source_deletes_nothing() {
    let (store, world, _) = deployed("offboard-spoofed", Duration::ZERO).await;
    let (alices, _) = world.asleep_agent("alice", "Mine");
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());
    world.sim.control().reset_counters();

    for source in ["attacker.example", "", "Studio.Identity"] {
        let report = f
            .invoke(offboarded("alice", source), context(60_000))
            .await
            .expect("refused, not failed: nobody retries it");
        assert_eq!(report["refused"], true, "{report}");
    }
    let mut sourceless = offboarded("alice", OFFBOARDING_SOURCE);
    sourceless.as_object_mut().unwrap().remove("source");
    let report = f.invoke(sourceless, context(60_000)).await.unwrap();
    assert_eq!(report["refused"], true, "{report}");
    assert_eq!(report["source"], "none", "{report}");

    assert!(!world.snapshots_of(&alices).is_empty());
    assert_eq!(world.agentkit_calls(), 0, "not even a listing");
    assert!(snapwake::offboarding::progress(&store, "alice")
        .await
        .unwrap()
        .is_none());
}

/// One scheduled sweep of `f` (the retention sweep, then the pending offboardings): its report.
async fn sweep<S: snapwake::store::AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Delete<S, K>,
) -> Value {
    f.invoke(serde_json::json!({"action": "sweep"}), context(120_000))
        .await
        .unwrap()
}

/// `owner`'s offboarding as if it had been accepted longer ago than any request admitted before
/// it can still work ([`snapwake::offboarding::ADMITTED_FOR`]): the time a sweep would wait.
async fn age_offboarding<S: snapwake::store::AgentStore>(store: &S, owner: &str) {
    let mut progress = snapwake::offboarding::progress(store, owner)
        .await
        .unwrap()
        .unwrap();
    let aged = snapwake::offboarding::ADMITTED_FOR + Duration::from_secs(1);
    progress.started_at_ms -= aged.as_millis() as u64;
    snapwake::offboarding::record(store, &progress)
        .await
        .unwrap();
}
