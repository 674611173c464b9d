//! Schedules end to end (docs/schedules.md): the routes through the resume function, the tick
//! on DynamoDB Local's sparse index, wakes and sleeps through the real lock against the
//! simulated AgentKit, counted in AgentKit's own Resume calls.

use std::time::Duration;

use serde_json::{json, Value};
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentKey, Kind};
use snapwake::invocation::Deadline;
use snapwake::store::{AgentStore, DueQuery, ScheduleStore};
use snapwake_resume::tick::TickReport;
use snapwake_resume::Resume;
use snapwake_sim::SimControl;
use snapwake_tests::*;

mod agree;
mod dst;
mod fanout;
mod idle;
mod kills;
mod ready_at_the_minute;
mod routes;
mod sqs_wire;
mod ticks;
mod usage;
mod weeks;

fn key(agent_id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, agent_id)
}

/// When the stored schedule of `agent_id` wakes it next.
async fn next_wake(store: &impl ScheduleStore, agent_id: &str) -> Option<u64> {
    let schedule = store.get_schedule(&key(agent_id)).await.unwrap();
    schedule.expect("a schedule").next_wake_ms
}

/// Epoch ms of an RFC 3339 instant.
fn at(rfc3339: &str) -> u64 {
    snapwake::ambient::epoch_ms(rfc3339).unwrap()
}

async fn call<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    method: &str,
    agent_id: &str,
    verb: &str,
    who: Who<'_>,
    body: Option<Value>,
) -> (u16, Value) {
    let path = format!("/v1/agents/codex/{agent_id}/{verb}");
    let body = body.map(|b| b.to_string());
    let resp = f.handle(request(method, &path, who, body.as_deref())).await;
    answer(&resp)
}

/// `method` on the schedule of alice's agent `agent_id`, as alice.
async fn alices_schedule<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    method: &str,
    agent_id: &str,
    body: Option<Value>,
) -> (u16, Value) {
    call(f, method, agent_id, "schedule", Who::User("alice"), body).await
}

/// PUT the schedule of alice's agent; answers the body of a 200.
async fn put_schedule<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    schedule: Value,
) -> Value {
    let (status, body) = alices_schedule(f, "PUT", agent_id, Some(schedule)).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// An asleep agent of alice that snapwake has a record of (woken once, then put to sleep):
/// its id. AgentKit's counters are reset afterwards.
async fn asleep_agent<S: AgentStore + ScheduleStore, K: AgentKit>(
    world: &World,
    f: &Resume<S, K>,
    name: &str,
) -> String {
    let (agent_id, _) = world.asleep_agent("alice", name);
    let (status, body) = settle_alices(f, &agent_id, "resume", Duration::from_secs(30)).await;
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("awake")),
        "{body}"
    );
    let (status, body) = settle_alices(f, &agent_id, "sleep", Duration::from_secs(30)).await;
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("asleep")),
        "{body}"
    );
    world.sim.control().reset_counters();
    agent_id
}

/// One tick at `time_ms`, as EventBridge Scheduler would send it to a function with no queue:
/// its own invocation consumes what it hands over.
async fn tick<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    time_ms: u64,
) -> TickReport {
    f.tick_and_consume(time_ms, Deadline::after(Duration::from_secs(25)))
        .await
        .expect("a tick")
}

/// The tick alone at `time_ms`: what is due handed to the fan-out, for the test's consumer.
async fn hand_over<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    time_ms: u64,
) -> TickReport {
    f.tick(time_ms, Deadline::after(Duration::from_secs(25)))
        .await
        .expect("a tick")
}

/// Work the fan-out queue with `f`, as its consumer, until it is idle.
async fn drain<S: AgentStore + ScheduleStore, K: AgentKit>(
    queue: &snapwake::fanout::DueChannel,
    f: &Resume<S, K>,
) {
    queue
        .drain(snapwake::fanout::AT_ONCE, |due| async move {
            f.due(&due, Deadline::after(Duration::from_secs(25)))
                .await
                .is_ok()
        })
        .await;
}

/// Tick at `time_ms`, then keep ticking (a minute later each time, as the Scheduler would)
/// until nothing is carried any more; an occurrence still open after `minutes` ticks fails the
/// test.
async fn tick_until_settled<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    time_ms: u64,
    minutes: u64,
) {
    for m in 0..minutes {
        tick(f, time_ms + m * 60_000).await;
        let open = f
            .store
            .get_schedule(&key(agent_id))
            .await
            .unwrap()
            .and_then(|s| s.open);
        if open.is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    panic!("{agent_id}: the occurrence is still open after {minutes} ticks");
}

/// The occurrence a fresh daily 08:30 UTC wake schedule will fire first.
async fn wake_schedule<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
) -> u64 {
    let body = put_schedule(
        f,
        agent_id,
        json!({"timezone": "UTC", "wake": "30 8 * * *"}),
    )
    .await;
    at(body["next_wake_at"].as_str().unwrap())
}

fn resumes(ctl: &SimControl) -> u64 {
    ctl.counters().received("ResumeSessionFromSnapshot")
}

fn weekdays(wake: &str, sleep: &str, zone: &str) -> Value {
    json!({"timezone": zone, "wake": wake, "sleep": sleep})
}
