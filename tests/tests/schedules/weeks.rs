//! The second day, and the tenth: two agents on office hours in Europe/Berlin for two
//! simulated weeks (across the spring DST change), AgentKit's clock moved with the ticks,
//! every occurrence ticked on time, again, concurrently and late, with a fault at some
//! steps. Each weekday wakes each agent once and each sleep leaves one Ready snapshot, and
//! each of those changes is announced once, set off by the schedule.

use snapwake_sim::Fault;
use snapwake_tests::event_bus::EventBusDouble;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_keep_office_hours_for_two_weeks() {
    let bus = EventBusDouble::start().await;
    let store = std::sync::Arc::new(dynamo_store_streamed("tick-weeks").await);
    // The table's stream relayed to the bus, as the deployed announce function does.
    let relay = snapwake_tests::relay::Relay::of_table(&store, bus.publisher()).await;
    let world = World::registered(Duration::from_millis(200), &store).await;
    let ctl = world.sim.control();
    ctl.set_snapshot_ready_delay(Duration::from_millis(400));
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agents = [
        asleep_agent(&world, &f, "Data helper").await,
        asleep_agent(&world, &f, "Reviewer").await,
    ];
    // Monday 2027-03-22; Berlin changes to summer time on Sunday the 28th.
    let start = at("2027-03-22T00:00:00Z");
    for agent in &agents {
        let plan = snapwake::schedule::Plan::check(&snapwake::schedule::ScheduleBody {
            timezone: Some("Europe/Berlin".into()),
            wake: Some("30 8 * * MON-FRI".into()),
            sleep: Some("0 12 * * MON-FRI".into()),
        })
        .unwrap();
        let mut record = plan.record(start);
        record.key = Some(key(agent));
        put_new_schedule(&store, &record).await;
    }
    let snapshots_before: usize = agents.iter().map(|a| world.snapshots_of(a).len()).sum();
    let end = at("2027-04-03T00:00:00Z");
    let mut occurrences = 0u32;
    let (mut wakes, mut sleeps) = (0u64, 0u64);
    loop {
        // The next instant anything is due, as the Scheduler's minute ticks would reach it.
        let mut due = u64::MAX;
        for agent in &agents {
            let s = store.get_schedule(&key(agent)).await.unwrap().unwrap();
            due = due.min(s.due_at_ms().unwrap_or(u64::MAX));
        }
        if due >= end {
            break;
        }
        occurrences += 1;
        let local = snapwake::ambient::format_ms(due);
        ctl.set_now(time::OffsetDateTime::from_unix_timestamp((due / 1000) as i64).unwrap());
        // A fault at some steps: AgentKit throttles the first call of every third occurrence.
        if occurrences.is_multiple_of(3) {
            ctl.inject(Fault::error(None, "Throttling", 429).next(1))
                .unwrap();
        }
        // On time, twice at once, then again a minute and three minutes late.
        let (a, b) = tokio::join!(tick(&f, due), tick(&f, due));
        let woke = a.woke + b.woke;
        let slept = a.slept + b.slept;
        assert!(woke + slept <= agents.len(), "{local}: {a:?} {b:?}");
        for late in [60_000, 180_000] {
            tick(&f, due + late).await;
        }
        for agent in &agents {
            tick_until_settled(&f, agent, due + 240_000, 30).await;
        }
        // The minute after: a wake reached by the last of those is looked at again at once
        // (the day's keep, docs/schedules.md), which sets when its session is next kept.
        tick(&f, due + 300_000).await;
        ctl.clear_faults();
        let is_wake = store
            .get_schedule(&key(&agents[0]))
            .await
            .unwrap()
            .unwrap()
            .last
            .is_some_and(|l| l.action == snapwake::domain::Action::Wake);
        for agent in &agents {
            let live = live_sessions(&ctl, agent).len();
            let want = usize::from(is_wake);
            assert_eq!(live, want, "{local}: {agent} has {live} live sessions");
        }
        if is_wake {
            wakes += 2;
        } else {
            sleeps += 2;
        }
        assert_eq!(
            resumes(&ctl),
            wakes,
            "{local}: one Resume per agent per wake"
        );
    }
    // Ten weekdays, each with one wake and one sleep per agent.
    assert_eq!(occurrences, 20, "ten weekdays × (wake + sleep)");
    assert_eq!((wakes, sleeps), (20, 20));
    let snapshots_after: usize = agents.iter().map(|a| world.snapshots_of(a).len()).sum();
    assert_eq!(
        snapshots_after - snapshots_before,
        20,
        "each sleep left one snapshot"
    );
    // One event per change, each from the schedule: ten `awake` and ten `asleep` per agent
    // (a throttled wake may add a `wake_failed` before its retry), no change announced twice.
    relay.caught_up().await;
    let events = bus.published();
    for agent in &agents {
        let scheduled = |kind: &str| {
            events
                .iter()
                .filter(|e| e.detail["agent_id"] == agent.as_str() && e.detail_type == kind)
                .filter(|e| e.detail["trigger"] == "schedule")
                .count()
        };
        assert_eq!(
            (
                scheduled("snapwake.agent.awake"),
                scheduled("snapwake.agent.asleep")
            ),
            (10, 10),
            "{agent}"
        );
    }
    let mut change_ids: Vec<&str> = events
        .iter()
        .filter_map(|e| e.detail["change_id"].as_str())
        .collect();
    let all = change_ids.len();
    change_ids.sort_unstable();
    change_ids.dedup();
    assert_eq!(change_ids.len(), all, "a change announced twice");
    for agent in &agents {
        for id in world.snapshots_of(agent) {
            let status = ctl.snapshot(&id).and_then(|s| s.status);
            assert_eq!(status.as_deref(), Some("Ready"), "{agent}: {id}");
        }
    }
}
