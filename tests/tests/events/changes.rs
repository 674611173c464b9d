//! One event per state change made over HTTP, however many callers ask for it.

use snapwake::domain::WakeState;
use snapwake_sim::Fault;

use super::*;

/// A storm of 20 wakes, then a sleep, a create and a delete: one `awake`, one `asleep`, one
/// `created`, one `deleted`, each naming the record version its write made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_change_over_http_publishes_one_event() {
    let (store, bus, relay) = announcing("events-http").await;
    // The simulator on threads of its own: 20 callers at once on the test's two would keep
    // it from answering in time on a loaded machine (a Resume timing out is a failed wake).
    let world = World::start_apart(Duration::from_millis(200));
    world.register(&*store).await;
    let api = Arc::new(Api::new(store.clone(), world.client(), identity()));
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Announced");

    // 20 callers at once: one wake, one event.
    let answers =
        futures::future::join_all((0..20).map(|_| {
            settle_alices_as_a_client(&*api, &agent_id, "resume", Duration::from_secs(30))
        }))
        .await;
    assert!(
        answers
            .iter()
            .all(|(s, b)| *s == 200 && b["state"] == "awake"),
        "{answers:?}"
    );
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    let events = published_about(&relay, &bus, &agent_id).await;
    let awake = &events["snapwake.agent.awake"];
    assert_eq!(awake.len(), 1, "{events:#?}");
    assert_eq!(events.len(), 1, "nothing but the wake: {events:#?}");
    let detail = &awake[0].detail;
    assert_eq!(
        (
            detail["kind"].as_str(),
            detail["owner"].as_str(),
            detail["trigger"].as_str()
        ),
        (Some("codex"), Some("alice"), Some("http"))
    );
    assert_eq!(detail["session_id"].as_str(), record.session_id.as_deref());
    assert!(detail["snapshot_id"].is_null() && detail["error_code"].is_null());
    assert!(version_of(&awake[0]) <= record.version);
    assert!(snapwake::ambient::epoch_ms(detail["at"].as_str().unwrap()).is_some());
    assert_eq!(world.live_sessions_of(&agent_id), 1);

    // Sleep: one `asleep`, naming the snapshot the sleep kept.
    settle_to(&api, &agent_id, "sleep", "asleep").await;
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    let events = published_about(&relay, &bus, &agent_id).await;
    let asleep = &events["snapwake.agent.asleep"];
    assert_eq!(asleep.len(), 1, "{events:#?}");
    let kept = asleep[0].detail["snapshot_id"]
        .as_str()
        .expect("the snapshot kept");
    assert_ne!(
        kept, snapshot_id,
        "the sleep's own snapshot, not the older one"
    );
    assert_eq!(
        Some(kept),
        record.snapshots.first().map(|s| s.snapshot_id.as_str())
    );
    assert!(asleep[0].detail["session_id"].is_null());
    assert!(version_of(&asleep[0]) > version_of(&events["snapwake.agent.awake"][0]));

    // Create: one `created` with the new session.
    let resp = api
        .handle(create_request(
            Who::User("alice"),
            r#"{"kind":"codex","display_name":"Fresh"}"#,
            None,
        ))
        .await;
    let (status, view) = answer(&resp);
    assert_eq!(status, 201, "{view}");
    let created_id = view["agent_id"].as_str().unwrap().to_string();
    let events = published_about(&relay, &bus, &created_id).await;
    assert_eq!(events.len(), 1, "{events:#?}");
    let created = &events["snapwake.agent.created"];
    assert_eq!(created.len(), 1);
    assert_eq!(
        created[0].detail["session_id"], view["session"]["session_id"],
        "{view}"
    );

    // Delete the first agent: one `deleted`, and nothing more about it.
    let (status, body) = call(&api, "DELETE", &agent_id, "").await;
    assert_eq!(status, 204, "{body}");
    let events = published_about(&relay, &bus, &agent_id).await;
    let counts: Vec<(&str, usize)> = events.iter().map(|(t, d)| (t.as_str(), d.len())).collect();
    assert_eq!(
        counts,
        vec![
            ("snapwake.agent.asleep", 1),
            ("snapwake.agent.awake", 1),
            ("snapwake.agent.deleted", 1)
        ]
    );
    let tombstone = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(tombstone.state, WakeState::Gone);
    assert_eq!(
        version_of(&events["snapwake.agent.deleted"][0]),
        tombstone.version
    );
    assert_well_formed(&bus, &world);
}

/// A wake whose session vanishes at its first poll: `wake_failed` with the code the record
/// keeps, the snapshot untouched; the retry that wakes it publishes `awake`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_wake_publishes_wake_failed_with_its_code() {
    let (store, world, bus, relay) = deployed_announcing("events-failed", Duration::ZERO).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Vanishing");
    let ctl = world.sim.control();
    ctl.inject(Fault::error(Some("GetSession"), "InvalidResource.NotFound", 404).next(1))
        .unwrap();

    let (status, body) = call(&api, "POST", &agent_id, "resume").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (502, Some("PROVIDER_ERROR")),
        "{body}"
    );
    assert!(ctl.snapshot(&snapshot_id).is_some(), "the snapshot is kept");
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Failed);
    let events = published_about(&relay, &bus, &agent_id).await;
    assert_eq!(events.len(), 1, "{events:#?}");
    let failed = &events["snapwake.agent.wake_failed"];
    assert_eq!(failed.len(), 1);
    // The reason the record keeps (and the list shows), more precise than the answer's 502.
    let recorded = record.error.as_deref().expect("the failure recorded");
    assert_eq!(
        failed[0].detail["error_code"].as_str(),
        snapwake::domain::failure::recorded_code(recorded),
        "{recorded}"
    );
    assert_eq!(failed[0].detail["error_code"], "SESSION_ENDED");
    assert_eq!(failed[0].detail["snapshot_id"], snapshot_id.as_str());
    assert_eq!(version_of(&failed[0]), record.version);

    outcome_forgotten().await;
    settle_to(&api, &agent_id, "resume", "awake").await;
    let events = published_about(&relay, &bus, &agent_id).await;
    assert_eq!(events["snapwake.agent.awake"].len(), 1, "{events:#?}");
    assert_eq!(events["snapwake.agent.wake_failed"].len(), 1, "{events:#?}");
    assert_well_formed(&bus, &world);
}
