//! What set a change off: a schedule's tick, the retention sweep, an owner's offboarding (and
//! HTTP everywhere else, changes.rs).

use snapwake::domain::WakeState;
use snapwake::identity::caller;
use snapwake::invocation::Deadline;
use snapwake_delete::{DeleteSettings, RetentionPolicy, SweepSettings};
use snapwake_sim::SeedSnapshot;

use super::*;

const DAY: Duration = Duration::from_secs(24 * 3600);

/// A wake schedule's occurrence wakes the agent: `awake` with trigger `schedule`, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_wakes_with_trigger_schedule() {
    let (store, world, bus, relay) =
        deployed_announcing("events-tick", Duration::from_millis(300)).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let (agent_id, _) = world.asleep_agent("alice", "Scheduled");
    // Known to snapwake: woken and put to sleep once over HTTP.
    settle_to(&api, &agent_id, "resume", "awake").await;
    settle_to(&api, &agent_id, "sleep", "asleep").await;
    let body = serde_json::json!({"timezone": "UTC", "wake": "30 8 * * *"}).to_string();
    let (status, schedule) = answer(
        &api.handle(request(
            "PUT",
            &format!("/v1/agents/codex/{agent_id}/schedule"),
            Who::User("alice"),
            Some(&body),
        ))
        .await,
    );
    assert_eq!(status, 200, "{schedule}");
    let wake_at = snapwake::ambient::epoch_ms(schedule["next_wake_at"].as_str().unwrap()).unwrap();

    // Ticks a minute apart from the occurrence until the wake completes.
    for minute in 0..20 {
        let report = api
            .resume
            .tick_and_consume(
                wake_at + minute * 60_000,
                Deadline::after(Duration::from_secs(25)),
            )
            .await
            .expect("a tick");
        assert_eq!(report.errors, 0, "{report:?}");
        let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
        if record.state == WakeState::Awake {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let events = published_about(&relay, &bus, &agent_id).await;
    let awake = &events["snapwake.agent.awake"];
    assert_eq!(
        awake.len(),
        2,
        "the HTTP wake and the scheduled one: {events:#?}"
    );
    let triggers: Vec<&str> = awake
        .iter()
        .map(|d| d.detail["trigger"].as_str().unwrap())
        .collect();
    assert_eq!(triggers, vec!["http", "schedule"]);
    assert_eq!(events["snapwake.agent.asleep"].len(), 1);
    assert_well_formed(&bus, &world);
}

/// The sweep deletes an idle agent (`deleted`, trigger `sweep`); an owner's offboarding
/// deletes theirs (`deleted`, trigger `offboarding`), one event each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_and_offboarding_announce_their_deletions() {
    let (store, world, bus, relay) = deployed_announcing("events-cleanup", Duration::ZERO).await;
    let ctl = world.sim.control();
    let idle = caller::mint("carol");
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: world.recoverable.clone(),
        user_session_id: Some(idle.clone()),
        created_at: Some(time::OffsetDateTime::now_utc() - 100 * DAY),
        session_metadata: vec![snapwake::agentkit::types::MetadataEntry::string(
            "Username", "carol",
        )],
        ..SeedSnapshot::default()
    })
    .unwrap();
    let idle_sweep = SweepSettings {
        policy: RetentionPolicy {
            keep: 3,
            max_age: None,
            max_idle: Some(60 * DAY),
        },
        ..SweepSettings::default()
    };
    let settings = DeleteSettings {
        sweep: idle_sweep,
        ..delete_settings(&quick_wake())
    };
    let f = delete_fn(store.clone(), world.client(), settings);
    let report = sweep(&f).await;
    assert_eq!(report.counts.idle_deleted, 1, "{report:?}");
    let events = published_about(&relay, &bus, &idle).await;
    let deleted = &events["snapwake.agent.deleted"];
    assert_eq!((events.len(), deleted.len()), (1, 1), "{events:#?}");
    assert_eq!(deleted[0].detail["trigger"], "sweep");

    // alice's agent, woken over HTTP, then alice leaves.
    let api = Api::new(store.clone(), world.client(), identity());
    let (agent_id, _) = world.asleep_agent("alice", "Leaving");
    settle_to(&api, &agent_id, "resume", "awake").await;
    let report = f
        .offboard(
            "alice",
            Deadline::after(Duration::from_secs(60)),
            false,
            &snapwake_delete::Quiet,
        )
        .await
        .unwrap();
    assert!(report.failed == 0 && report.deleted >= 1, "{report:?}");
    let events = published_about(&relay, &bus, &agent_id).await;
    let deleted = &events["snapwake.agent.deleted"];
    assert_eq!(deleted.len(), 1, "{events:#?}");
    assert_eq!(deleted[0].detail["trigger"], "offboarding");
    assert_eq!(deleted[0].detail["owner"], "alice");
    assert_eq!(
        store.get(&key(&agent_id)).await.unwrap().unwrap().state,
        WakeState::Gone
    );
    assert_well_formed(&bus, &world);
}

/// A change is announced as the doing of what started it, whoever settles it: a wake the tick
/// started and a person's poll finished is the schedule's; a person's wake that a tick (its
/// schedule coming due meanwhile) found in flight and finished is the person's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_is_announced_as_what_started_it_whoever_settles_it() {
    let (store, world, bus, relay) =
        deployed_announcing("events-starter", Duration::from_millis(300)).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let (by_schedule, _) = world.asleep_agent("alice", "Started by the tick");
    let (by_person, _) = world.asleep_agent("alice", "Started by alice");
    for agent_id in [&by_schedule, &by_person] {
        settle_to(&api, agent_id, "resume", "awake").await;
        settle_to(&api, agent_id, "sleep", "asleep").await;
    }
    // From here a session takes 2 s to be Ready: a short request or a tick leaves it waking.
    world
        .sim
        .control()
        .set_session_ready_delay(Duration::from_secs(2));
    let body = serde_json::json!({"timezone": "UTC", "wake": "30 8 * * *"}).to_string();
    let mut wake_at = 0;
    for agent_id in [&by_schedule, &by_person] {
        let put = request(
            "PUT",
            &format!("/v1/agents/codex/{agent_id}/schedule"),
            Who::User("alice"),
            Some(&body),
        );
        let (status, schedule) = answer(&api.handle(put).await);
        assert_eq!(status, 200, "{schedule}");
        wake_at = snapwake::ambient::epoch_ms(schedule["next_wake_at"].as_str().unwrap()).unwrap();
    }
    // alice wakes one herself (a short request: 202, the session booting) ...
    let (status, body) = call(&api, "POST", &by_person, "resume").await;
    assert_eq!(status, 202, "{body}");
    // ... the tick hands both occurrences to the queue, and a consumer works each once (no
    // wait either: its holder answers once Resume is sent; its follow-ups wait in the queue) ...
    let tick = api
        .resume
        .tick(wake_at, Deadline::after(Duration::from_secs(25)));
    assert_eq!(tick.await.expect("a tick").errors, 0);
    for agent_id in [&by_schedule, &by_person] {
        let schedule = store.get_schedule(&key(agent_id)).await.unwrap().unwrap();
        let due = snapwake::fanout::DueOccurrence::of(&schedule, wake_at, Default::default())
            .expect("a keyed schedule");
        let deadline = Deadline::after(Duration::from_secs(25));
        api.resume.due(&due, deadline).await.expect("handled");
    }
    let waking = store.get(&key(&by_schedule)).await.unwrap().unwrap();
    assert_eq!(waking.state, WakeState::Waking, "the tick left it booting");
    // ... both sessions boot, and each change is finished by the other side: alice's poll
    // settles the scheduled wake; the next tick, finding her wake in flight on its own
    // occurrence, settles hers.
    tokio::time::sleep(Duration::from_secs(4)).await;
    settle_to(&api, &by_schedule, "resume", "awake").await;
    for minute in 1..10 {
        let tick = api.resume.tick_and_consume(
            wake_at + minute * 60_000,
            Deadline::after(Duration::from_secs(25)),
        );
        tick.await.expect("a tick");
        let record = store.get(&key(&by_person)).await.unwrap().unwrap();
        if record.state == WakeState::Awake {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for (agent_id, started_by) in [(&by_schedule, "schedule"), (&by_person, "http")] {
        let events = published_about(&relay, &bus, agent_id).await;
        let awake = &events["snapwake.agent.awake"];
        let last = awake.last().expect("an awake event").detail["trigger"].clone();
        assert_eq!(last, started_by, "{agent_id}: {awake:#?}");
    }
    assert_well_formed(&bus, &world);
}
