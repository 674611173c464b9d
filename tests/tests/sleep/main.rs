//! Sleep now, end to end: API Gateway v2 requests into the resume function, the lock on
//! DynamoDB Local, AgentKit simulated over HTTP. A sleep snapshots the session, waits until
//! the snapshot is Ready, only then ends the session — once, however many callers ask, never
//! racing a wake, and never ending a session whose snapshot is not Ready.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentKey, AgentRecord, Kind, WakeState};
use snapwake::store::AgentStore;
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_sim::{Fault, SimControl};
use snapwake_tests::*;

fn key(agent_id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, agent_id)
}

async fn post<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    verb: &str,
) -> (u16, Value) {
    post_with(f, agent_id, verb, None).await
}

/// [`post`], saying `Prefer: wait=<s>` when `prefer` is set.
async fn post_with<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    verb: &str,
    prefer: Option<u64>,
) -> (u16, Value) {
    let path = format!("/v1/agents/codex/{agent_id}/{verb}");
    let req = alices_request("POST", &path);
    let req = match prefer {
        Some(s) => prefer_wait(req, s),
        None => req,
    };
    let resp = f.handle(req).await;
    let (status, body) = answer(&resp);
    if status == 202 {
        // One second while the snapshot is young, two once it has taken a while.
        assert!(
            matches!(header_of(&resp, "retry-after"), Some("1" | "2")),
            "{body}"
        );
        assert_eq!(
            header_of(&resp, "location"),
            Some(format!("/v1/agents/codex/{agent_id}").as_str())
        );
    }
    (status, body)
}

/// POST until the answer is not 202 (at most 30 s), as a client honouring `Retry-After`
/// would, only faster. Answers the last answer and how many 202s came first.
async fn settle<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    verb: &str,
) -> (u16, Value, u32) {
    settle_with(f, agent_id, verb, None).await
}

/// [`settle`] `verb` of `agent_id`, whose answer must be a 200 with `flag` (`slept` of a sleep,
/// `resumed` of a resume) set to `expected`: its body.
async fn settle_and_check<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    verb: &str,
    flag: &str,
    expected: bool,
) -> Value {
    let (status, body, _) = settle(f, agent_id, verb).await;
    assert_eq!(
        (status, body[flag].as_bool()),
        (200, Some(expected)),
        "{body}"
    );
    body
}

/// [`settle`], each request saying `Prefer: wait=<s>` when `prefer` is set.
async fn settle_with<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    verb: &str,
    prefer: Option<u64>,
) -> (u16, Value, u32) {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    let mut accepted = 0;
    loop {
        let (status, body) = post_with(f, agent_id, verb, prefer).await;
        // As a client does: a 202 is asked again (sooner than its `Retry-After`, to be quick),
        // and so is a retryable 503 or 429, after its `Retry-After`.
        let again = match status {
            202 => Duration::from_millis(100),
            429 | 503 if body["retryable"] == true => Duration::from_secs(1),
            _ => return (status, body, accepted),
        };
        if std::time::Instant::now() > until {
            return (status, body, accepted);
        }
        accepted += u32::from(status == 202);
        tokio::time::sleep(again).await;
    }
}

/// The snapshots of `agent_id` that `before` did not list.
fn new_snapshots(world: &World, agent_id: &str, before: &[String]) -> Vec<String> {
    world
        .snapshots_of(agent_id)
        .into_iter()
        .filter(|s| !before.contains(s))
        .collect()
}

fn received(ctl: &SimControl, action: &str) -> u64 {
    ctl.counters().received(action)
}

/// An awake agent of alice (woken through snapwake, so its record knows it): its id and
/// the live session's id.
async fn awake_agent<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    world: &World,
    f: &Resume<S, K>,
    name: &str,
) -> (String, String) {
    let (agent_id, _) = world.asleep_agent("alice", name);
    let (status, body, _) = settle(f, &agent_id, "resume").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("awake")),
        "{body}"
    );
    let live = live_sessions(&world.sim.control(), &agent_id);
    assert_eq!(live.len(), 1);
    (agent_id, live[0].clone())
}

/// A sleep of `agent_id` whose holder dies right after AgentKit answered `action` (a gate
/// holds it there while its task is aborted): the record as the dead holder left it.
async fn sleep_dying_after<S>(
    store: &S,
    world: &World,
    wake: &WakeSettings,
    agent_id: &str,
    action: &'static str,
) -> AgentRecord
where
    S: AgentStore + snapwake::store::ScheduleStore + Clone + 'static,
{
    let gate = Arc::new(Gate::after(world.client(), action));
    let dying = Arc::new(resume_fn(store.clone(), gate.clone(), wake.clone()));
    let holder = tokio::spawn({
        let agent_id = agent_id.to_string();
        async move { post(&dying, &agent_id, "sleep").await }
    });
    gate.reached().await;
    holder.abort();
    store.get(&key(agent_id)).await.unwrap().unwrap()
}

mod day_after_day;
mod many_at_once;
mod failing_snapshots;
mod interrupted_sleeps;
