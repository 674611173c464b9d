//! Ready at the minute (docs/schedules.md): a kind whose readiness the ticks have measured
//! starts its wakes early enough to be Ready by their minute; a kind with none measured starts
//! them by the prior (a minute); what a started wake took is measured again.

use snapwake::domain::WakeState;
use snapwake::fanout::{DueChannel, Fanout};
use snapwake::schedule::Readiness;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_measured_readiness_starts_the_wake_on_the_tick_before_its_minute() {
    let (store, world, ctl) = deployed("tick-lead", Duration::from_millis(300)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Data helper").await;
    // As if earlier mornings had measured codex sandboxes Ready in 20 s: 20 s, the budget's
    // time for one wake and the 5 s margin start it at 08:29:35, so on the 08:29 tick, not on
    // the 08:28 one.
    Readiness::record(&store, Kind::Codex, &[20_000; 10])
        .await
        .unwrap();
    let w = wake_schedule(&f, &agent_id).await;
    let two_before = tick(&f, w - 120_000).await;
    assert_eq!((two_before.due, two_before.woke, resumes(&ctl)), (0, 0, 0));
    let before = tick(&f, w - 60_000).await;
    assert_eq!((before.due, before.woke), (1, 1), "{before:?}");
    assert_eq!(resumes(&ctl), 1);
    // Its consumer (the tick's own invocation here) followed it up to its end.
    let started = store.get_schedule(&key(&agent_id)).await.unwrap().unwrap();
    let last = started.last.expect("the occurrence was carried to its end");
    assert_eq!(
        (last.at_ms, last.outcome.as_str()),
        (w, "reached"),
        "the owner's minute, reached a minute before"
    );
    assert_eq!(started.next_wake_ms, Some(w + 86_400_000));

    // The ticks carry it to its end as ever: once, the agent awake, a day later next.
    tick_until_settled(&f, &agent_id, w - 30_000, 10).await;
    tick(&f, w).await;
    assert_eq!(resumes(&ctl), 1, "one Resume for one occurrence");
    assert_eq!(live_sessions(&ctl, &agent_id).len(), 1);
    let done = store.get_schedule(&key(&agent_id)).await.unwrap().unwrap();
    let last = done.last.expect("finished");
    assert_eq!((last.at_ms, last.outcome.as_str()), (w, "reached"));
    // What it took was measured: one more sample.
    let kept = Readiness::read(&store, Kind::Codex).await.unwrap();
    assert_eq!(kept.samples_ms.len(), 11, "{kept:?}");
}

/// A crowded minute starts earlier than a quiet one: the budget needs time for every wake due
/// in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowded_minute_starts_earlier() {
    let (store, world, ctl) = deployed("tick-lead-crowd", Duration::from_millis(100)).await;
    let mut f = resume_fn(store.clone(), world.client(), quick_wake());
    // Two scheduled wakes a second, so that a crowd of 200 (300 Resumes, planned for a third
    // refused) takes 150 s.
    f.schedules.wakes_per_second = 2;
    let agent_id = asleep_agent(&world, &f, "Data helper").await;
    let w = wake_schedule(&f, &agent_id).await;
    // 200 more wakes due that minute, of another kind as fast (they count for the budget's
    // time; having no agent, they start nothing).
    for kind in [Kind::Codex, Kind::Hermes] {
        Readiness::record(&store, kind, &[20_000]).await.unwrap();
    }
    let mine = store.get_schedule(&key(&agent_id)).await.unwrap().unwrap();
    for i in 0..200 {
        let mut other = mine.clone();
        other.key = Some(AgentKey::new(Kind::Hermes, format!("crowd-{i:03}")));
        put_new_schedule(&store, &other).await;
    }
    // 20 s + 201 wakes (302 Resumes) at 2 a second (the consumers send 120 a minute: two
    // minutes, and 31 s for the last 62) + 5 s + a tick period less 1 ms: 235.999 s, from
    // 08:26:04, so on the 08:27 tick and not the 08:26 one. Alone it would be the 08:29 tick.
    let early = tick(&f, w - 240_000).await;
    assert_eq!(
        (early.due, early.woke, resumes(&ctl)),
        (0, 0, 0),
        "{early:?}"
    );
    let on_time = tick(&f, w - 180_000).await;
    assert_eq!((on_time.due, on_time.woke), (201, 1), "{on_time:?}");
    assert_eq!(resumes(&ctl), 1);
}

/// The schedule and every view of the agent say when waking starts, and the tick keeps it:
/// by the prior while nothing is measured; once measured, the minute of the tick that
/// starts it, kept with each new occurrence, and never later, even when the readiness
/// measured since would start it later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_says_when_waking_starts_and_the_tick_keeps_it() {
    let (store, world, _) = deployed("tick-lead-shown", Duration::from_millis(300)).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let ctl = world.sim.control();
    let agent_id = asleep_agent(&world, &api.resume, "Data helper").await;

    let unmeasured = put_schedule(
        &api.resume,
        &agent_id,
        json!({"timezone": "UTC", "wake": "30 8 * * *"}),
    )
    .await;
    // Nothing measured: the prior (60 s) and the margin start it at 08:28:55, the 08:28 tick.
    assert_eq!(
        at(unmeasured["wake_starts_at"].as_str().unwrap()),
        at(unmeasured["next_wake_at"].as_str().unwrap()) - 120_000,
        "nothing measured: waking starts by the prior: {unmeasured}"
    );

    // Measured at 80 s: 80 s + one wake's budget time + 5 s margin start it at 08:28:34, so
    // the 08:29 tick starts it (not the 08:28 one, which is earlier than needed).
    Readiness::record(&store, Kind::Codex, &[80_000; 4])
        .await
        .unwrap();
    let set = put_schedule(
        &api.resume,
        &agent_id,
        json!({"timezone": "UTC", "wake": "30 8 * * *"}),
    )
    .await;
    let w = at(set["next_wake_at"].as_str().unwrap());
    let starts = at(set["wake_starts_at"].as_str().unwrap());
    assert_eq!(starts, w - 120_000, "{set}");
    // Every view of the agent shows the same.
    let path = format!("/v1/agents/codex/{agent_id}");
    let (status, view) = answer(&api.handle(alices_request("GET", &path)).await);
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["schedule"], set, "the view and the route disagree");

    // Measured faster since (20 s would start it on the 08:29 tick): the tick keeps the time
    // the owner was shown.
    Readiness::record(&store, Kind::Codex, &[20_000; 64])
        .await
        .unwrap();
    let before = tick(&api.resume, starts - 60_000).await;
    assert_eq!((before.woke, resumes(&ctl)), (0, 0), "{before:?}");
    let at_start = tick(&api.resume, starts).await;
    assert_eq!((at_start.woke, resumes(&ctl)), (1, 1), "{at_start:?}");

    // The next occurrence keeps the lead of today's readiness (20 s: the 08:29 tick), and the
    // route and the view show it.
    let (status, next) = alices_schedule(&api.resume, "GET", &agent_id, None).await;
    assert_eq!(status, 200, "{next}");
    let next_wake = at(next["next_wake_at"].as_str().unwrap());
    assert_eq!(next_wake, w + 86_400_000, "{next}");
    assert_eq!(
        at(next["wake_starts_at"].as_str().unwrap()),
        next_wake - 60_000,
        "{next}"
    );
    let (_, view) = answer(&api.handle(alices_request("GET", &path)).await);
    assert_eq!(view["schedule"], next, "the view and the route disagree");
}

/// A queue consumer does not wait on the wakes it sends: it follows each up, the occurrence
/// sent again after half of what the wake has taken so far (2 s at least), and the follow-up
/// that sees it Ready settles it. The agent is awake within seconds of its session, and the
/// kind's readiness is kept as the follow-ups saw it: wakes are planned by it, not by the
/// ticks' minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_follows_its_wakes_up_and_keeps_the_readiness_it_saw() {
    let store = dynamo_store("tick-lead-seen").await;
    let ready_in = 1_500;
    let world = World::registered(Duration::from_millis(ready_in), &store).await;
    let ctl = world.sim.control();
    let queue = DueChannel::new();
    let f = Resume {
        fanout: Fanout::Channel(queue.clone()),
        ..resume_fn(store.clone(), world.client(), quick_wake())
    };
    let agents = [
        asleep_agent(&world, &f, "First").await,
        asleep_agent(&world, &f, "Second").await,
    ];
    let body = json!({"timezone": "UTC", "wake": "30 8 * * *"});
    let mut w = 0;
    for agent_id in &agents {
        let answer = put_schedule(&f, agent_id, body.clone()).await;
        w = at(answer["next_wake_at"].as_str().unwrap());
    }
    let started = snapwake::ambient::now_ms();
    let report = hand_over(&f, w).await;
    assert_eq!((report.due, report.queued), (2, 2), "{report:?}");
    drain(&queue, &f).await;
    assert_eq!(resumes(&ctl), 2, "one Resume each, however many follow-ups");
    assert!(
        queue.counts().delayed >= 2,
        "each wake was followed up: {:?}",
        queue.counts()
    );

    // Both awake, settled by their follow-ups within seconds of their session being Ready (no
    // tick since). Measured from the session AgentKit started (its `createdAt`, whole seconds:
    // up to a second earlier than the truth), not from the tick: under the account's rate limits
    // a Resume may wait for its turn, which is not the follow-ups' doing.
    let mut latest_ready_ms = 0;
    for agent_id in &agents {
        let record = store.get(&key(agent_id)).await.unwrap().unwrap();
        assert_eq!(record.state, WakeState::Awake, "{agent_id}");
        let awake_at = snapwake::ambient::epoch_ms(record.updated_at.as_deref().unwrap()).unwrap();
        let session = ctl
            .sessions()
            .into_iter()
            .find(|s| s.user_session_id.as_deref() == Some(agent_id.as_str()) && s.is_active())
            .expect("its session");
        let created = snapwake::ambient::epoch_ms(session.created_at.as_deref().unwrap()).unwrap();
        let ready_at = created + ready_in;
        latest_ready_ms = latest_ready_ms.max(ready_at + 1_000);
        assert!(
            awake_at.saturating_sub(ready_at) < 4_000 + 1_000,
            "{agent_id} settled {} ms after its session was Ready",
            awake_at.saturating_sub(ready_at)
        );
        let schedule = store.get_schedule(&key(agent_id)).await.unwrap().unwrap();
        let last = schedule.last.expect("the occurrence finished");
        assert_eq!((last.at_ms, last.outcome.as_str()), (w, "reached"));
    }
    // Each sample is what one wake took from its start (after the tick began) until a
    // follow-up saw it Ready: never less than the session's readiness, never more than its
    // session being Ready (at the latest) plus a follow-up's period.
    let kept = Readiness::read(&store, Kind::Codex).await.unwrap();
    assert_eq!(kept.samples_ms.len(), 2, "one a wake: {kept:?}");
    let most = latest_ready_ms.saturating_sub(started) + 4_000;
    for seen in &kept.samples_ms {
        assert!(
            (ready_in..most).contains(seen),
            "seen Ready {seen} ms after its start, the session Ready in {ready_in} ms"
        );
    }
    assert!(
        kept.p95() < Some(10_000),
        "planned by what was seen: {kept:?}"
    );
}
