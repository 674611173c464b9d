//! Delivery: at least once, the same `change_id` on every try; a bus that fails or does not
//! answer never changes the change it reports, and loses nothing: what it refused is published,
//! in order, once it is back.

use super::*;

/// The bus fails the first try (500) and the second (200 with the entry failed): the third
/// publishes, and all three carry the same event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_publish_is_retried_with_the_same_change_id() {
    let (store, world, bus, relay) = deployed_announcing("events-retry", Duration::ZERO).await;
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
    let (store, world, bus, relay) =
        deployed_announcing("events-down", Duration::from_millis(200)).await;
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
        usage: dynamo_store("announce-over-the-wire").await,
        sink: bus.publisher(),
    };
    let batch: Value = serde_json::from_str(include_str!(
        "../../../functions/announce/tests/fixtures/stream-batch.json"
    ))
    .expect("the announce function's fixture");
    let answer = announce.handle(&batch, far()).await;
    assert_eq!(answer, serde_json::json!({"batchItemFailures": []}));
    let published: Vec<String> = bus.published().into_iter().map(|d| d.detail_type).collect();
    assert_eq!(
        published,
        ["snapwake.agent.created", "snapwake.agent.asleep"]
    );
}

/// A deadline no test reaches: the invocation's time is not what these tests are about.
fn far() -> snapwake::invocation::Deadline {
    snapwake::invocation::Deadline::after(std::time::Duration::from_secs(60))
}

/// The changes of `agents` (one each, in order), as the stream hands them over.
fn announced_changes(agents: &[&str]) -> Vec<snapwake::store::RecordChange> {
    agents
        .iter()
        .enumerate()
        .map(|(n, agent)| {
            let mut record = snapwake::domain::AgentRecord::absent(key(agent));
            record.version = n as u64 + 1;
            record.announced = Some(snapwake::domain::Announcement {
                what: snapwake::domain::Announce::Awake,
                trigger: snapwake::domain::Trigger::Http,
            });
            snapwake::store::RecordChange {
                sequence: (n + 1).to_string(),
                old: None,
                new: Some(record),
            }
        })
        .collect()
}

/// Ten events a `PutEvents` call (EventBridge's limit), never two of one agent in one call (a
/// call's entries fail one by one: the second could go out before the first), and in time: a
/// deadline that leaves no room for a call publishes nothing and names the first change to
/// deliver again, rather than running the invocation out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_go_ten_a_call_one_per_agent_and_stop_in_time() {
    let bus = EventBusDouble::start().await;
    let mut agents: Vec<String> = (0..25).map(|i| format!("studio-many-{i:02}")).collect();
    // One agent twice, close together.
    agents.insert(5, "studio-many-03".to_string());
    let agents: Vec<&str> = agents.iter().map(String::as_str).collect();
    let changes = announced_changes(&agents);
    let relayed = snapwake::events::announce(&changes, &bus.publisher(), far()).await;
    assert_eq!((relayed.published, relayed.failed_at), (26, None));
    let mut calls: Vec<String> = bus.published().into_iter().map(|d| d.body).collect();
    calls.dedup();
    let sizes: Vec<usize> = calls
        .iter()
        .map(|body| {
            serde_json::from_str::<Value>(body).unwrap()["Entries"]
                .as_array()
                .unwrap()
                .len()
        })
        .collect();
    assert_eq!(
        sizes,
        vec![5, 10, 10, 1],
        "the second event of one agent starts a call"
    );
    let order: Vec<String> = bus
        .published()
        .into_iter()
        .map(|d| d.detail["change_id"].as_str().unwrap().to_string())
        .collect();
    let own: Vec<&String> = order
        .iter()
        .filter(|c| c.contains("studio-many-03/"))
        .collect();
    assert_eq!(own.len(), 2);
    assert!(own[0].ends_with("/4") && own[1].ends_with("/6"), "{own:?}");

    // Too little time left for one call: nothing sent, the first change named, at once.
    let before = bus.deliveries().len();
    let started = std::time::Instant::now();
    let short = snapwake::invocation::Deadline::after(Duration::from_millis(500));
    let relayed = snapwake::events::announce(&changes, &bus.publisher(), short).await;
    assert_eq!(
        (relayed.published, relayed.failed_at.as_deref()),
        (0, Some("1"))
    );
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(bus.deliveries().len(), before);
}
