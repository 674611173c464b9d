//! The way back is never pruned (docs/operations.md, "The retention sweep"): a wake, a sleep
//! and an expiry each land between the sweep's listing and its deletions, with `KEEP=1` and
//! with a maximum age, and the agent's newest Ready snapshot survives every time. The sweep
//! is paused just after its listing (a [`Gate`] on the pass's ListSessions) while the change
//! lands through the API or AgentKit's own clock.

use super::*;

/// What lands between the listing and the deletions.
#[derive(Clone, Copy, Debug)]
enum Landing {
    /// The owner deletes the newest snapshot and wakes the agent from the one left.
    Wake,
    /// A sleep whose snapshot AgentKit fails: the agent stays awake on its session.
    Sleep,
    /// The session expires and AgentKit's expiry snapshot fails.
    Expiry,
}

fn keep_one() -> RetentionPolicy {
    retention(1, None, None)
}

fn thirty_days() -> RetentionPolicy {
    retention(3, Some(30 * DAY), None)
}

async fn the_way_back_survives(landing: Landing, policy: RetentionPolicy) {
    let store = dynamo_store(&format!("way-back-{landing:?}-{}", policy.keep)).await;
    let world = World::registered(Duration::ZERO, &store).await;
    let ctl = world.sim.control();
    let agent_id = caller::mint("alice");
    let now = OffsetDateTime::now_utc();
    let seed = |days: u64| {
        let at = now - Duration::from_secs(days * 24 * 3600);
        ctl.seed_snapshot(snapshot_seed(&world.recoverable, "alice", &agent_id, at))
            .unwrap()
    };
    // The way back: Ready, older than the maximum age.
    let way_back = seed(40);
    let newer = match landing {
        Landing::Wake => Some(seed(35)),
        Landing::Sleep | Landing::Expiry => {
            world.live_session("alice", &agent_id);
            None
        }
    };

    let gate = Arc::new(Gate::after(world.client(), "ListSessions"));
    let f = cleanup_fn(store.clone(), gate.clone(), sweep_under(policy));
    let api = Api::new(store.clone(), world.client(), identity());
    let path = format!("/v1/agents/codex/{agent_id}");
    let land = async {
        gate.reached().await;
        match landing {
            Landing::Wake => {
                let newer = newer.as_deref().unwrap_or_default();
                let del = alices_request("DELETE", &format!("{path}/snapshots/{newer}"));
                assert_eq!(answer(&api.handle(del).await).0, 204);
                let wake = alices_request("POST", &format!("{path}/resume"));
                let (status, body) = answer(&api.handle(wake).await);
                assert_eq!(status, 200, "{body}");
            }
            Landing::Sleep => {
                ctl.set_snapshot_outcome("Failed");
                let sleep = alices_request("POST", &format!("{path}/sleep"));
                let (status, body) = answer(&api.handle(sleep).await);
                assert!(
                    status >= 400,
                    "the sleep fails with its snapshot: {status} {body}"
                );
                assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1, "still awake");
            }
            Landing::Expiry => {
                ctl.set_expiry_snapshot_outcome("Failed");
                ctl.advance(Duration::from_secs(9 * 3600 + 60));
                assert_eq!(ctl.counters().live_sessions_of(&agent_id), 0, "expired");
            }
        }
        gate.release.notify_one();
    };
    let (report, ()) = tokio::join!(sweep(&f, Duration::from_secs(120)), land);
    assert!(report.completed, "{report:?}");
    assert_eq!(report.counts.errors, 0, "{report:?}");

    let held = held(&world, &agent_id);
    assert!(
        held.contains(&way_back),
        "{landing:?} with {policy:?}: the way back {way_back} was pruned; left {held:?}"
    );
    // And a second sweep, on a listing that is fresh this time, agrees.
    let again = sweep(&f, Duration::from_secs(120)).await;
    assert_eq!(again.counts.pruned, 0, "{again:?}");
    assert!(world.snapshots_of(&agent_id).contains(&way_back));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_between_listing_and_pruning_keeps_the_way_back_with_keep_one() {
    the_way_back_survives(Landing::Wake, keep_one()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_between_listing_and_pruning_keeps_the_way_back_with_a_maximum_age() {
    the_way_back_survives(Landing::Wake, thirty_days()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_between_listing_and_pruning_keeps_the_way_back_with_keep_one() {
    the_way_back_survives(Landing::Sleep, keep_one()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_between_listing_and_pruning_keeps_the_way_back_with_a_maximum_age() {
    the_way_back_survives(Landing::Sleep, thirty_days()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_between_listing_and_pruning_keeps_the_way_back_with_keep_one() {
    the_way_back_survives(Landing::Expiry, keep_one()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_between_listing_and_pruning_keeps_the_way_back_with_a_maximum_age() {
    the_way_back_survives(Landing::Expiry, thirty_days()).await;
}
