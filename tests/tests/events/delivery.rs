//! Delivery: at least once, the same `change_id` on every try; a bus that fails or does not
//! answer never changes the change it reports, and loses nothing: what it refused is published,
//! in order, once it is back.

use super::*;

/// The bus fails the first try (500) and the second (200 with the entry failed): the third
/// publishes, and all three carry the same event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_publish_is_retried_with_the_same_change_id() {
    let (store, bus, relay) = announcing("events-retry").await;
    let world = World::registered(Duration::ZERO, &store).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let (agent_id, _) = world.asleep_agent("alice", "Retried");
    bus.fail_next(&[BusFault::ServerError, BusFault::FailedEntry]);

    settle_to(&api, &agent_id, "resume", "awake").await;
    relay.caught_up().await;
    let tries: Vec<Delivery> = bus
        .deliveries()
        .into_iter()
        .filter(|d| d.detail["agent_id"] == agent_id.as_str())
        .collect();
    assert_eq!(
        tries.iter().map(|d| d.accepted).collect::<Vec<_>>(),
        vec![false, false, true],
        "{tries:#?}"
    );
    assert!(
        tries.iter().all(|d| d.detail == tries[0].detail),
        "one event, tried three times: {tries:#?}"
    );
    assert_eq!(tries[0].detail_type, "snapwake.agent.awake");
    assert_well_formed(&bus, &world);
}

/// A bus that never answers in time, then one that refuses everything: each change still
/// happens and answers as it would with no bus at all. Nothing is lost: once the bus is back,
/// the changes it missed are published, each once, in the order they were made, and so is
/// the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bus_down_never_changes_the_answer_and_loses_nothing() {
    let (store, bus, relay) = announcing("events-down").await;
    let world = World::registered(Duration::from_millis(200), &store).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let (agent_id, _) = world.asleep_agent("alice", "Unheard");

    bus.fail_next(&[BusFault::Slow; 3]);
    bus.fail_next(&[BusFault::ServerError; 1000]);
    settle_to(&api, &agent_id, "resume", "awake").await;
    assert_eq!(world.live_sessions_of(&agent_id), 1);
    settle_to(&api, &agent_id, "sleep", "asleep").await;
    let accepted = |bus: &EventBusDouble| {
        bus.published()
            .into_iter()
            .filter(|d| d.detail["agent_id"] == agent_id.as_str())
            .count()
    };
    // The relay keeps trying the wake's event, and nothing gets through.
    let tried = || {
        bus.deliveries()
            .iter()
            .filter(|d| d.detail_type == "snapwake.agent.awake")
            .count()
    };
    let limit = tokio::time::Instant::now() + Duration::from_secs(30);
    while tried() < 4 {
        assert!(tokio::time::Instant::now() < limit, "the relay gave up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(accepted(&bus), 0, "the bus is down");

    // Back: what it missed, in order, once each; then the next change.
    bus.clear_faults();
    outcome_forgotten().await;
    settle_to(&api, &agent_id, "resume", "awake").await;
    relay.caught_up().await;
    let order: Vec<(String, u64)> = bus
        .published()
        .into_iter()
        .filter(|d| d.detail["agent_id"] == agent_id.as_str())
        .map(|d| (d.detail_type.clone(), version_of(&d)))
        .collect();
    let types: Vec<&str> = order.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        types,
        vec![
            "snapwake.agent.awake",
            "snapwake.agent.asleep",
            "snapwake.agent.awake"
        ],
        "{order:?}"
    );
    assert!(order.windows(2).all(|w| w[0].1 < w[1].1), "{order:?}");
    assert_well_formed(&bus, &world);
}

/// The double is as strict as EventBridge: a request signed with another secret is refused
/// (403), and the publisher reports it rather than counting it published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_signed_with_another_secret_is_refused() {
    use snapwake::events::EventSink;

    let bus = EventBusDouble::start().await;
    let wrong = bus.publisher_signing_with("not-the-secret");
    let mut record = snapwake::domain::AgentRecord::absent(key("studio-x"));
    record.announced = Some(snapwake::domain::Announcement {
        what: snapwake::domain::Announce::Awake,
        trigger: snapwake::domain::Trigger::Http,
    });
    let event = snapwake::events::event_of(&record).expect("an announced record");
    let refused = wrong.publish(&event).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!((bus.bad_signatures(), bus.deliveries().len()), (1, 0));
    // The right secret is accepted.
    bus.publisher().publish(&event).await.expect("published");
    assert_eq!(bus.published().len(), 1);
}

/// The announce function as deployed: a stream batch as Lambda hands it over (the announce
/// crate's fixture) through snapwake's real EventBridge publisher to the bus on the wire. Its
/// `PutEvents` is the one call the function's policy must allow (tests/tests/iam.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_announce_function_publishes_a_stream_batch_over_the_wire() {
    let bus = EventBusDouble::start().await;
    let announce = snapwake_announce::Announce {
        sink: bus.publisher(),
    };
    let batch: Value = serde_json::from_str(include_str!(
        "../../../functions/announce/tests/fixtures/stream-batch.json"
    ))
    .expect("the announce function's fixture");
    let answer = announce.handle(&batch).await;
    assert_eq!(answer, serde_json::json!({"batchItemFailures": []}));
    let published: Vec<String> = bus.published().into_iter().map(|d| d.detail_type).collect();
    assert_eq!(
        published,
        ["snapwake.agent.created", "snapwake.agent.asleep"]
    );
}
