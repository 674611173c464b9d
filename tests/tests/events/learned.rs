//! What snapwake learns rather than makes: a session AgentKit's clock ended at its expiry,
//! once the refresh or the sweep records it, is announced with trigger `agentkit`: `asleep`
//! when AgentKit kept a snapshot, `wake_failed` when that snapshot failed. On the simulator's
//! clock: the sessions expire because AgentKit's time passes, not because anyone asks.

use snapwake::domain::WakeState;
use snapwake::invocation::Deadline;

use super::*;

const HOURS_9: Duration = Duration::from_secs(9 * 3600);

type Kit = snapwake::agentkit::AgentKitClient;
type Delete = snapwake_delete::Delete<Store, Kit>;

/// A streamed table relayed to a bus, AgentKit simulated, the API and the delete function.
async fn setup(test: &str) -> (Store, EventBusDouble, Relay, World, Api<Store, Kit>, Delete) {
    let (store, world, bus, relay) = deployed_announcing(test, Duration::ZERO).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let f = delete_fn(
        store.clone(),
        world.client(),
        delete_settings(&quick_wake()),
    );
    (store, bus, relay, world, api, f)
}

/// One refresh, as its schedule runs it.
async fn refresh(f: &Delete) {
    f.refresh(Deadline::after(Duration::from_secs(60)))
        .await
        .expect("a refresh");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_agentkit_ended_is_announced_once_the_refresh_or_the_sweep_records_it() {
    let (store, bus, relay, world, api, f) = setup("events-agentkit").await;
    let ctl = world.sim.control();
    let (kept, _) = world.asleep_agent("alice", "Kept");
    let (lost, _) = world.asleep_agent("alice", "Lost");
    settle_to(&api, &kept, "resume", "awake").await;
    settle_to(&api, &lost, "resume", "awake").await;
    let session_of = |id: &str| {
        let store = store.clone();
        let key = key(id);
        async move { store.get(&key).await.unwrap().unwrap().session_id.unwrap() }
    };
    let kept_session = session_of(&kept).await;

    // Nothing has ended yet: the refresh records nothing, and nothing is announced.
    refresh(&f).await;
    let before = published_about(&relay, &bus, &kept).await;
    assert_eq!(before.len(), 1, "the HTTP wake only: {before:#?}");

    // AgentKit's clock passes both sessions' 8 hours; the first is saved, the second's
    // snapshot fails.
    ctl.advance(HOURS_9);
    let expired: Vec<_> = ctl
        .snapshots()
        .into_iter()
        .filter(|s| s.session_id == Some(kept_session.clone()))
        .collect();
    assert_eq!(
        expired.len(),
        1,
        "AgentKit kept the expired session: {expired:?}"
    );
    let expiry_snapshot = expired[0].snapshot_id.clone().unwrap();

    // The refresh (snapshots only) sees the kept one's expiry snapshot: asleep, by AgentKit.
    // (A pass leaves alone a record written in the second its listing began: give snapwake's
    // own clock that second.)
    tokio::time::sleep(Duration::from_millis(1200)).await;
    refresh(&f).await;
    let record = store.get(&key(&kept)).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.session_id.as_deref()),
        (WakeState::Asleep, None)
    );
    let events = published_about(&relay, &bus, &kept).await;
    let asleep = &events["snapwake.agent.asleep"];
    assert_eq!(asleep.len(), 1, "{events:#?}");
    assert_eq!(asleep[0].detail["trigger"], "agentkit");
    assert_eq!(asleep[0].detail["snapshot_id"], expiry_snapshot.as_str());
    assert_eq!(version_of(&asleep[0]), record.version);

    // Again: nothing new happened, nothing is announced.
    refresh(&f).await;
    sweep(&f).await;
    let again = published_about(&relay, &bus, &kept).await;
    assert_eq!(again["snapwake.agent.asleep"].len(), 1, "{again:#?}");
    assert_eq!(again.len(), 2, "{again:#?}");
    assert_well_formed(&bus, &world);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_expiry_snapshot_failed_is_announced_wake_failed_by_the_sweep() {
    let (store, bus, relay, world, api, f) = setup("events-agentkit-failed").await;
    let ctl = world.sim.control();
    let (agent_id, _) = world.asleep_agent("alice", "Unsaved");
    settle_to(&api, &agent_id, "resume", "awake").await;

    ctl.set_expiry_snapshot_outcome("Failed");
    ctl.advance(HOURS_9);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    sweep(&f).await;
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Failed);
    let events = published_about(&relay, &bus, &agent_id).await;
    let failed = &events["snapwake.agent.wake_failed"];
    assert_eq!(failed.len(), 1, "{events:#?}");
    assert_eq!(failed[0].detail["trigger"], "agentkit");
    assert_eq!(failed[0].detail["error_code"], "SESSION_EXPIRED");
    assert!(!events.contains_key("snapwake.agent.asleep"), "{events:#?}");
    // The agent can still be woken from the snapshot it had before.
    outcome_forgotten().await;
    settle_to(&api, &agent_id, "resume", "awake").await;
    assert_well_formed(&bus, &world);
}
