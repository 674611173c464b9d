//! Faults (docs/architecture.md, "Quality bars and where they are checked"): the resume function
//! against an unreliable AgentKit and an unreliable DynamoDB.
//!
//! - A soak: 200 asleep agents woken by concurrent retrying callers while the simulator answers
//!   20% of all AgentKit calls with 503 (some after acting) and 10% with 429. Once the faults
//!   are cleared every agent ends awake with exactly one live session, no snapshot is lost and
//!   every answer on the way was a well-formed status.
//! - DynamoDB Local killed (SIGKILL) mid-storm, on a `-dbPath` of its own so the table survives
//!   a restart: every caller answers within its budget with 200/202 or a problem+json 503/500,
//!   nobody panics, and after the restart a retry converges on one live session per agent with
//!   no second Resume (a Resume whose record was lost with the store is adopted by the
//!   reconcile by UserSessionId).
//!
//! - Day after day under the same faults (20% bare 503s after acting, 10% 429s, on every
//!   action): agents woken, put to sleep and woken again, round after round, by concurrent
//!   retrying callers. Every sleep takes exactly one snapshot, which is Ready, and the session
//!   is ended only once it is; every wake comes from the snapshot the last sleep took, with one
//!   Resume; never two live sessions; every caller ends on 200.
//!
//! They also hold every 200 and 202 to its view (docs/http-api.md): a 200 shows the agent `awake`
//! (`asleep` for a sleep), a 202 `waking`. That check comes last, after the invariants above.
//!
//! The tests run one after the other (a lock): they are heavy for a 2-core machine, and one's
//! budget assertions must not measure another's load.

use std::collections::{BTreeMap, HashMap};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lambda_http::{Body, Response};
use serde_json::Value;
use snapwake::agentkit::types::{Action, Snapshot};
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::store::dynamo::{sdk_defaults, DynamoStore};
use snapwake::store::table::create_table_without_stream;
use snapwake::store::AgentStore;
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_sim::{Fault, SimControl};
use snapwake_tests::*;

/// One test at a time in this file (see the module docs).
static SERIAL: Mutex<()> = Mutex::new(());

fn runtime() -> tokio::runtime::Runtime {
    multi_thread_runtime(4)
}

fn path(agent_id: &str) -> String {
    format!("/v1/agents/codex/{agent_id}/resume")
}

/// One answer of the resume function: its status, the session it names (the awake session of
/// a 200, the waking one of a 202, if any), the problem's code, what is wrong with its shape,
/// if anything, and whether the agent's `state` in it contradicts the status.
#[derive(Clone, Debug)]
struct Answer {
    status: u16,
    session: String,
    code: String,
    /// The `Retry-After` header, in seconds.
    retry_after_s: Option<u64>,
    malformed: Option<String>,
    inconsistent: Option<String>,
}

/// A JSON string's text, or nothing.
fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

impl Answer {
    /// `resp` (its `status`, `body` and `Retry-After`), judged: its `session`, what is wrong with
    /// its shape and whether its state contradicts its status.
    fn judged(
        resp: &Response<Body>,
        body: &Value,
        session: String,
        malformed: Option<String>,
        inconsistent: Option<String>,
    ) -> Answer {
        Answer {
            status: resp.status().as_u16(),
            session,
            code: text(&body["code"]),
            retry_after_s: header_of(resp, "retry-after").and_then(|v| v.parse().ok()),
            malformed,
            inconsistent,
        }
    }
}

/// Resume `agent_id` once as its `owner`, and judge the answer. Its shape: a 200 is JSON naming
/// a session, a 202 is JSON with `Retry-After` and `Location`, and every status in `errors` is
/// a retryable problem+json carrying the request's id; any other status is malformed. Its
/// consistency (docs/http-api.md): a 200 shows the agent `awake`, a 202 `waking`.
async fn resume_once<S: AgentStore + snapwake::store::ScheduleStore, K: AgentKit>(
    function: &Resume<S, K>,
    owner: &str,
    agent_id: &str,
    errors: &[u16],
) -> Answer {
    let event = event("POST", &path(agent_id), Who::User(owner), None);
    let request_id = request_id_of(&event);
    let resp = function.handle(from_event(&event)).await;
    let (status, body) = answer(&resp);
    let content_type = header_of(&resp, "content-type").unwrap_or("");
    let json = content_type == "application/json" && body.is_object();
    let (session, malformed, want_state) = match status {
        200 => {
            let session = text(&body["session"]["session_id"]);
            let bad = (!json || session.is_empty()).then(|| format!("200 {content_type} {body}"));
            (session, bad, Some("awake"))
        }
        202 => {
            let headers =
                header_of(&resp, "retry-after").is_some() && header_of(&resp, "location").is_some();
            let bad = (!json || !headers).then(|| format!("202 {content_type} {body}"));
            (text(&body["wake"]["session_id"]), bad, Some("waking"))
        }
        s if errors.contains(&s) => {
            let bad = problem_fault(&resp, s, Some(&request_id))
                .or_else(|| (body["retryable"] != true).then(|| format!("not retryable: {body}")));
            (String::new(), bad, None)
        }
        s => (
            String::new(),
            Some(format!("unexpected status {s}: {body}")),
            None,
        ),
    };
    let inconsistent = want_state
        .filter(|want| body["state"] != *want)
        .map(|_| format!("{status} with state {}: {body}", body["state"]));
    Answer::judged(&resp, &body, session, malformed, inconsistent)
}

/// How many answers of each status (and problem code).
fn tally<'a>(answers: impl IntoIterator<Item = &'a Answer>) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for a in answers {
        let key = if a.code.is_empty() {
            a.status.to_string()
        } else {
            format!("{} {}", a.status, a.code)
        };
        *by.entry(key).or_insert(0) += 1;
    }
    by
}

/// A pause of `min_ms..max_ms`, so retrying callers do not come back in lock step.
async fn pause(min_ms: u64, max_ms: u64) {
    let ms = min_ms + u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * (max_ms - min_ms) / 256;
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// The most live sessions any agent had at any sample: a watcher of the simulator's world
/// sampling every 100 ms until stopped.
struct LiveWatch {
    max: Arc<Mutex<BTreeMap<String, u64>>>,
    task: tokio::task::JoinHandle<()>,
}

impl LiveWatch {
    fn start(ctl: SimControl) -> LiveWatch {
        let max = Arc::new(Mutex::new(BTreeMap::new()));
        let task = tokio::spawn({
            let max = max.clone();
            async move {
                loop {
                    let live = ctl.counters().live_sessions;
                    {
                        let mut max = max.lock().unwrap();
                        for (usid, n) in live {
                            let m = max.entry(usid).or_insert(0);
                            *m = (*m).max(n);
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
        LiveWatch { max, task }
    }

    /// Stop sampling; the agents ever seen with more than one live session.
    fn doubled(self) -> BTreeMap<String, u64> {
        self.task.abort();
        let max = self.max.lock().unwrap();
        max.iter()
            .filter(|(_, n)| **n > 1)
            .map(|(k, n)| (k.clone(), *n))
            .collect()
    }
}

/// The owners of the agents, in turn.
const OWNERS: [&str; 5] = ["alice", "bob", "carol", "dave", "erin"];

/// `count` agents asleep in `world`, owned by [`OWNERS`] in turn and named `<name> <i>`:
/// (owner, agent id, snapshot id).
fn asleep_fleet(world: &World, count: usize, name: &str) -> Vec<(&'static str, String, String)> {
    (0..count)
        .map(|i| {
            let owner = OWNERS[i % OWNERS.len()];
            let (agent_id, snapshot_id) = world.asleep_agent(owner, &format!("{name} {i}"));
            (owner, agent_id, snapshot_id)
        })
        .collect()
}

/// Short settings: a Resume whose outcome is unknown holds its agent only 2.5 s (the
/// readiness timeout), a wait leaves room for one whole AgentKit request timeout (2 s) after
/// locating and reconciling, and joiners re-read the record at the specification's pace
/// (0.25 s → 1 s: 400 joiners share one DynamoDB Local). The readiness timeout is shorter than
/// the wait, as in resume.rs's `quick()`: a holder may outlive its lease.
fn soak_settings() -> WakeSettings {
    let ready_timeout = Duration::from_millis(2500);
    WakeSettings {
        watch_min: Duration::from_millis(250),
        watch_max: Duration::from_secs(1),
        poll_lease: Duration::from_millis(500),
        ..wake_settings(
            Duration::from_secs(2),
            ready_timeout,
            Duration::from_secs(4),
        )
    }
}

mod soak;
mod own_dynamo;
mod dynamodb_outage;
mod cycle;
mod wake_sleep_cycles;
