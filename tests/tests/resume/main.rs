//! The resume function end to end: API Gateway v2 requests into the handler, the wake lock on
//! DynamoDB Local (and the in-memory store), AgentKit simulated over HTTP.
//!
//! The storm spreads 500 resumes of one agent over threads of this process and over two child
//! processes (this same test binary, re-run in child mode), all sharing one table and one
//! simulator: exactly one ResumeSessionFromSnapshot may reach AgentKit.

use std::future::Future;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use snapwake::agentkit::types::Action;
use snapwake::agentkit::{AgentKit, AgentKitClient};
use snapwake::ambient::now_ms;
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::invocation::Deadline;
use snapwake::store::memory::MemoryStore;
use snapwake::store::{AgentStore, Changes, Condition};
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_sim::{Fault, SeedSnapshot};
use snapwake_tests::*;
use tokio::sync::Notify;

fn path(agent_id: &str) -> String {
    format!("/v1/agents/codex/{agent_id}/resume")
}

/// Short leases so the crash tests do not wait a minute for an expiry.
fn quick() -> WakeSettings {
    let (lease, ready_timeout) = (Duration::from_millis(500), Duration::from_millis(1500));
    WakeSettings {
        poll_lease: Duration::from_millis(300),
        ..wake_settings(lease, ready_timeout, Duration::from_secs(5))
    }
}

/// Every AgentKit call the simulator received so far.
fn agentkit_calls(ctl: &snapwake_sim::SimControl) -> u64 {
    ctl.counters().actions.values().map(|a| a.received).sum()
}

fn session_id(body: &serde_json::Value) -> String {
    body["session"]["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// The storms' callers, here at the crate root with the child mode, which runs them too: the
// storms re-run this test binary as `storm_child --exact`, so that test keeps its name.

/// One caller: resume until the answer is final, as a client does: a 202, or any problem that
/// says it is retryable (a 503 or 429 of a table or an AgentKit that could not keep up, a 409 of
/// an agent too contended to decide in one request), is asked again after its `Retry-After`; for at most `patience`. Answers the final (status, session id) and how many
/// 202s came first. (Callers once asked again 200 ms after a 202, five times what the server
/// asks: 500 of them were a load no client makes, and on a busy machine DynamoDB Local fell
/// so far behind that a storm outlived its callers' patience.)
async fn resume_until_settled<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    function: &Resume<S, K>,
    agent_id: &str,
    patience: Duration,
) -> (u16, String, u32) {
    let until = std::time::Instant::now() + patience;
    let mut waiting = 0;
    loop {
        let resp = function
            .handle(alices_request("POST", &path(agent_id)))
            .await;
        let (status, body) = answer(&resp);
        let again = ask_again_after(&resp);
        let Some(pause) = again.filter(|_| std::time::Instant::now() < until) else {
            return (status, session_id(&body), waiting);
        };
        if status == 202 {
            waiting += 1;
        }
        tokio::time::sleep(pause).await;
    }
}

/// Run `count` concurrent callers of `agent_id`, each resuming until settled.
async fn storm<S: AgentStore + snapwake::store::ScheduleStore + 'static, K: AgentKit>(
    function: Arc<Resume<S, K>>,
    agent_id: &str,
    count: usize,
) -> Vec<(u16, String)> {
    let tasks: Vec<_> = (0..count)
        .map(|_| {
            let function = function.clone();
            let agent_id = agent_id.to_string();
            tokio::spawn(async move {
                let (status, sid, _) =
                    resume_until_settled(&function, &agent_id, Duration::from_secs(60)).await;
                (status, sid)
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn wait_until(epoch_ms: u64) -> impl Future<Output = ()> {
    let now = now_ms();
    tokio::time::sleep(Duration::from_millis(epoch_ms.saturating_sub(now)))
}

/// Child mode of the storms: resumes from another OS process against the same table and
/// simulator, one `ANSWER <status> <session>` line per caller.
#[test]
fn storm_child() {
    let Some(_) = std::env::var_os("SNAPWAKE_STORM_CHILD") else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap();
    let rt = multi_thread_runtime(2);
    rt.block_on(async {
        let store = dynamo_table(&var("STORM_TABLE"), false).await;
        let function = Arc::new(resume_fn(
            store,
            client(&var("STORM_ENDPOINT")),
            WakeSettings::default(),
        ));
        wait_until(var("STORM_START_AT_MS").parse().unwrap()).await;
        let answers = storm(
            function,
            &var("STORM_AGENT"),
            var("STORM_COUNT").parse().unwrap(),
        )
        .await;
        for (status, sid) in answers {
            println!("ANSWER {status} {sid}");
        }
    });
}

/// The agent a crash test wakes: one with a UserSessionId (its owner wakes it), or a
/// `snapshot-<id>` agent (a snapshot without one; an admin wakes it).
struct Subject {
    agent_id: String,
    snapshot_id: String,
    who: Who<'static>,
}

impl Subject {
    fn owned(world: &World) -> Subject {
        let (agent_id, snapshot_id) = world.asleep_agent("alice", "Crashy");
        Subject {
            agent_id,
            snapshot_id,
            who: Who::User("alice"),
        }
    }

    fn snapshot_agent(world: &World) -> Subject {
        let snapshot_id = world
            .sim
            .control()
            .seed_snapshot(SeedSnapshot {
                tool_id: world.recoverable.clone(),
                session_id: Some("s-nameless".into()),
                ..SeedSnapshot::default()
            })
            .unwrap();
        Subject {
            agent_id: format!("snapshot-{snapshot_id}"),
            snapshot_id,
            who: Who::Admin("root"),
        }
    }

    /// The agent's live sessions in AgentKit (a `snapshot-<id>` agent's sessions carry no
    /// UserSessionId: every such session on the Tool counts).
    fn live(&self, world: &World) -> usize {
        let ctl = world.sim.control();
        if self.agent_id.starts_with("snapshot-") {
            ctl.sessions()
                .into_iter()
                .filter(|s| s.is_active() && s.user_session_id.is_none())
                .count()
        } else {
            ctl.counters().live_sessions_of(&self.agent_id) as usize
        }
    }

    /// Resume until it answers 200 (a 202 is asked again), at most ~10 s.
    async fn converge<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
        &self,
        f: &Resume<S, K>,
    ) -> serde_json::Value {
        let mut last = (0, serde_json::Value::Null);
        for _ in 0..40 {
            last = answer(
                &f.handle(request("POST", &path(&self.agent_id), self.who, None))
                    .await,
            );
            if last.0 == 200 {
                return last.1;
            }
            assert_eq!(last.0, 202, "{:?}", last.1);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("never converged: {:?}", last.1)
    }
}

mod storms;
mod crashes;
mod faults_and_slowness;
mod authorization_and_bad_input;
mod wake_answers;
mod short_requests;
