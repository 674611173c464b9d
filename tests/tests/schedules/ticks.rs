//! The tick: each occurrence acted on at most once, whatever the ticks (repeated, late,
//! concurrent, beside people clicking), counted in AgentKit's Resume calls.

use snapwake::store::Condition;

use super::*;

/// Ticks before, at, again at, concurrently with, and late after one wake occurrence: one
/// Resume, the agent awake, the next occurrence a day later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_fires_once_however_many_ticks() {
    let (store, world, ctl) = deployed("tick-once", Duration::from_millis(300)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Data helper").await;
    let w = wake_schedule(&f, &agent_id).await;

    // Nothing measured: the prior (a minute) starts it on the tick two minutes before.
    let early = tick(&f, w - 180_000).await;
    assert_eq!(
        (early.due, early.woke, resumes(&ctl)),
        (0, 0, 0),
        "not due three minutes early"
    );

    let first = tick(&f, w - 120_000).await;
    assert_eq!((first.due, first.woke), (1, 1), "{first:?}");
    // Repeated, concurrent and late ticks of the same occurrence.
    let again: Vec<TickReport> = futures::future::join_all(
        [w - 120_000, w, w, w + 60_000, w + 5 * 60_000].map(|t| tick(&f, t)),
    )
    .await;
    assert!(again.iter().all(|r| r.errors == 0), "{again:?}");
    tick_until_settled(&f, &agent_id, w + 6 * 60_000, 20).await;
    tick(&f, w + 14 * 60_000).await;

    assert_eq!(resumes(&ctl), 1, "one Resume for one occurrence");
    assert_eq!(live_sessions(&ctl, &agent_id).len(), 1);
    let schedule = store.get_schedule(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(
        schedule.next_wake_ms,
        Some(w + 86_400_000),
        "next: a day later"
    );
    assert!(schedule.open.is_none(), "{schedule:?}");
    assert_eq!(
        schedule.last.as_ref().map(|l| l.outcome.as_str()),
        Some("reached")
    );
}

/// Ten people click Wake at the very minute five ticks of the occurrence arrive: they all
/// join one wake (the lock), one Resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_clicks_joins_the_scheduled_wake() {
    let (store, world, ctl) = deployed("tick-storm", Duration::from_millis(500)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Data helper").await;
    let w = wake_schedule(&f, &agent_id).await;

    let ticks = futures::future::join_all((0..5).map(|_| tick(&f, w)));
    let clicks = futures::future::join_all(
        (0..10).map(|_| settle_alices(&f, &agent_id, "resume", Duration::from_secs(30))),
    );
    let (ticks, clicks) = tokio::join!(ticks, clicks);
    assert!(ticks.iter().all(|r| r.errors == 0), "{ticks:?}");
    assert_eq!(
        ticks.iter().map(|r| r.woke).sum::<usize>(),
        1,
        "one tick acted: {ticks:?}"
    );
    for (status, body) in &clicks {
        assert_eq!(
            (*status, body["state"].as_str()),
            (200, Some("awake")),
            "{body}"
        );
    }
    tick_until_settled(&f, &agent_id, w + 60_000, 10).await;
    assert_eq!(resumes(&ctl), 1, "clicks and ticks woke the agent once");
    assert_eq!(live_sessions(&ctl, &agent_id).len(), 1);
}

/// A tick 10 minutes late still wakes; one 16 minutes late skips the occurrence (no Resume,
/// recorded as missed) and waits for the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_ticks_catch_up_within_fifteen_minutes_only() {
    let (store, world, ctl) = deployed("tick-late", Duration::from_millis(100)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Data helper").await;
    let other = asleep_agent(&world, &f, "Reviewer").await;
    let w = wake_schedule(&f, &agent_id).await;
    assert_eq!(wake_schedule(&f, &other).await, w);

    // Only `other`'s tick is late beyond catching up: tick it alone first.
    store.delete_schedule(&key(&agent_id)).await.unwrap();
    let late = tick(&f, w + 16 * 60_000).await;
    assert_eq!((late.due, late.woke, late.settled), (1, 0, 1), "{late:?}");
    let missed = store.get_schedule(&key(&other)).await.unwrap().unwrap();
    assert_eq!(
        missed.last.as_ref().map(|l| l.outcome.as_str()),
        Some("missed")
    );
    assert_eq!(missed.next_wake_ms, Some(w + 86_400_000));
    assert_eq!(resumes(&ctl), 0, "a missed occurrence wakes nothing");

    let w = wake_schedule(&f, &agent_id).await;
    let report = tick(&f, w + 10 * 60_000).await;
    assert_eq!(report.woke, 1, "{report:?}");
    tick_until_settled(&f, &agent_id, w + 11 * 60_000, 10).await;
    assert_eq!(resumes(&ctl), 1);
}

/// A sleep schedule leaves a Ready snapshot and no session; a wake schedule finds an awake
/// agent awake and leaves it alone; once the scheduled wake has reached the agent, a person
/// putting it to sleep is not overruled by later ticks of that occurrence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_schedule_leaves_a_ready_snapshot_and_no_session() {
    let (store, world, ctl) = deployed("tick-sleep", Duration::from_millis(100)).await;
    ctl.set_snapshot_ready_delay(Duration::from_millis(1500));
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Data helper").await;
    let (status, _) = settle_alices(&f, &agent_id, "resume", Duration::from_secs(30)).await;
    assert_eq!(status, 200);
    ctl.reset_counters();
    let before = world.snapshots_of(&agent_id);

    let body = put_schedule(
        &f,
        &agent_id,
        json!({"timezone": "UTC", "wake": "0 8 * * *", "sleep": "0 19 * * *"}),
    )
    .await;
    let s = at(body["next_sleep_at"].as_str().unwrap());
    tick_until_settled(&f, &agent_id, s, 20).await;
    let new: Vec<String> = world
        .snapshots_of(&agent_id)
        .into_iter()
        .filter(|x| !before.contains(x))
        .collect();
    assert_eq!(new.len(), 1, "one snapshot: {new:?}");
    assert_eq!(
        ctl.snapshot(&new[0]).unwrap().status.as_deref(),
        Some("Ready")
    );
    assert!(live_sessions(&ctl, &agent_id).is_empty(), "no live session");
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, snapwake::domain::WakeState::Asleep);

    // The wake after it: one Resume; then the person sleeps it and the occurrence's later
    // ticks leave it asleep.
    let schedule = store.get_schedule(&key(&agent_id)).await.unwrap().unwrap();
    let w = schedule.next_wake_ms.unwrap();
    tick_until_settled(&f, &agent_id, w, 20).await;
    assert_eq!(resumes(&ctl), 1);
    let (status, _) = settle_alices(&f, &agent_id, "sleep", Duration::from_secs(30)).await;
    assert_eq!(status, 200);
    for m in 1..5 {
        tick(&f, w + m * 60_000).await;
    }
    assert_eq!(resumes(&ctl), 1, "the person's sleep stands");
    assert!(live_sessions(&ctl, &agent_id).is_empty());

    // An awake agent at its wake time is left alone.
    let (status, _) = settle_alices(&f, &agent_id, "resume", Duration::from_secs(30)).await;
    assert_eq!(status, 200);
    let w = next_wake(&store, &agent_id).await.unwrap();
    tick_until_settled(&f, &agent_id, w, 5).await;
    assert_eq!(resumes(&ctl), 2, "only the person's wake");
}

/// A deleted agent's schedule goes with it: the tick removes what a delete left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_agents_schedule_is_dropped_by_the_tick() {
    let (store, world, _) = deployed("tick-gone", Duration::from_millis(50)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Data helper").await;
    let w = wake_schedule(&f, &agent_id).await;
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    store
        .update(
            &key(&agent_id),
            &Condition::Version(record.version),
            &snapwake::store::Changes {
                state: Some(snapwake::domain::WakeState::Gone),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let report = tick(&f, w).await;
    assert_eq!((report.due, report.woke), (1, 0), "{report:?}");
    assert!(store.get_schedule(&key(&agent_id)).await.unwrap().is_none());
    assert_eq!(resumes(&world.sim.control()), 0);
}
