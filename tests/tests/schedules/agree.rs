//! One source for a schedule's next occurrences: `GET …/schedule` and every view of the agent
//! (`GET /v1/agents/{kind}/{agent_id}`) answer the same `next_wake_at` and `next_sleep_at`,
//! right after the schedule is set and after each tick has moved it on, over time zones with
//! and without daylight saving and expressions of every shape (a property test).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use snapwake::store::memory::MemoryStore;

use super::*;

/// The schedule as `GET …/schedule` answers it, and as the agent's view shows it.
async fn both<S, K>(api: &Api<S, K>, agent_id: &str) -> (Value, Value)
where
    S: AgentStore + ScheduleStore + snapwake::store::UsageStore,
    K: AgentKit,
{
    let (status, schedule) = alices_schedule(&api.resume, "GET", agent_id, None).await;
    assert_eq!(status, 200, "{schedule}");
    let path = format!("/v1/agents/codex/{agent_id}");
    let (status, view) = answer(&api.handle(alices_request("GET", &path)).await);
    assert_eq!(status, 200, "{view}");
    (schedule, view["schedule"].clone())
}

/// A tick at the schedule's next occurrence moves it on: the route and the view still agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_route_and_the_view_agree_after_a_tick_moved_the_schedule_on() {
    let (store, world, _) = deployed("schedule-agree", Duration::ZERO).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let agent_id = asleep_agent(&world, &api.resume, "Agreeable").await;
    let set = put_schedule(
        &api.resume,
        &agent_id,
        weekdays("30 8 * * *", "0 19 * * *", "Europe/Berlin"),
    )
    .await;
    let (schedule, view) = both(&api, &agent_id).await;
    assert_eq!(schedule, set);
    assert_eq!(view, set);

    let due = at(set["next_wake_at"].as_str().unwrap());
    let report = tick(&api.resume, due).await;
    assert_eq!(report.woke, 1, "{report:?}");
    let (schedule, view) = both(&api, &agent_id).await;
    assert_ne!(
        schedule["next_wake_at"], set["next_wake_at"],
        "moved on: {schedule}"
    );
    assert_eq!(view, schedule, "the view and the route disagree");
}

/// Time zones with daylight saving both ways, half and quarter hours, and none.
const ZONES: [&str; 8] = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "America/Sao_Paulo",
    "Asia/Kathmandu",
];

fn field(choices: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(choices)
}

/// Five-field expressions of every shape: lists, ranges, steps, names, days that rarely come.
fn expression() -> impl Strategy<Value = String> {
    (
        field(&["0", "30", "*/15", "5-10", "0,45", "*"]),
        field(&["8", "9-17", "*/6", "2", "0,12", "23"]),
        field(&["*", "1", "15", "29", "31", "1-7"]),
        field(&["*", "2", "JAN-MAR", "10", "*/2"]),
        field(&["*", "MON-FRI", "SUN", "1-5", "6,0"]),
    )
        .prop_map(|(m, h, dom, mon, dow)| format!("{m} {h} {dom} {mon} {dow}"))
}

#[test]
fn the_route_and_the_view_agree_over_zones_and_expressions() {
    let rt = multi_thread_runtime(2);
    let (world, api, agent_id) = rt.block_on(async {
        let world = World::start(Duration::ZERO).await;
        let store = std::sync::Arc::new(MemoryStore::new());
        world.register(&store).await;
        let mut api = Api::new(store, world.client(), identity());
        // Every shape of expression, however often it fires: the property is agreement, not
        // the deployment's floor (routes.rs tests that).
        api.resume.schedules.min_interval = Duration::ZERO;
        let agent_id = asleep_agent(&world, &api.resume, "Property").await;
        (world, api, agent_id)
    });
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let cases = (
        proptest::sample::select(&ZONES[..]),
        proptest::option::of(expression()),
        proptest::option::of(expression()),
    );
    let agreed = std::sync::atomic::AtomicUsize::new(0);
    let result = runner.run(&cases, |(zone, wake, sleep)| {
        rt.block_on(async {
            let body = json!({"timezone": zone, "wake": wake, "sleep": sleep});
            let (status, set) =
                alices_schedule(&api.resume, "PUT", &agent_id, Some(body.clone())).await;
            if status == 422 {
                // An expression that never fires in the years searched, or a wake and a sleep
                // in one minute: refused, named.
                prop_assert!(set["field"].is_string(), "{set}");
                return Ok(());
            }
            prop_assert_eq!(status, 200, "{} {}", body, set);
            let (mut schedule, view) = both(&api, &agent_id).await;
            prop_assert_eq!(&schedule, &set);
            prop_assert_eq!(&view, &schedule, "set: {}", body);
            // Each tick at the next occurrence moves it on; the two still agree.
            for _ in 0..2 {
                let next = [&schedule["next_wake_at"], &schedule["next_sleep_at"]]
                    .into_iter()
                    .filter_map(|t| t.as_str().map(at))
                    .min();
                let Some(next) = next else { break };
                tick(&api.resume, next).await;
                let view;
                (schedule, view) = both(&api, &agent_id).await;
                prop_assert_eq!(&view, &schedule, "ticked at {}: {}", next, body);
            }
            agreed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok::<(), TestCaseError>(())
        })
    });
    drop(world);
    if let Err(e) = result {
        panic!("{e}");
    }
    let agreed = agreed.into_inner();
    assert!(
        agreed >= 10,
        "only {agreed} schedules were accepted: widen the generator"
    );
}
