//! Monday 08:30 through `snapwake serve` on DynamoDB Local (docs/schedules.md, "At fleet
//! scale"): 300 agents of four owners whose wake schedules come due in one minute, AgentKit at
//! 150 ms a call with its assumed account-wide limits on and 30% of Resumes throttled besides,
//! and serve's own tick (every second, at the wall clock's minute, as deployed): every agent is
//! awake by the minute + its readiness + 5 s, with one Resume each.
//!
//! The kind's readiness is measured first, as a deployment's earlier mornings would have
//! measured it: ten agents due the minute before. Real time, not a moved simulator clock: what
//! the tick measures runs from an occurrence's start to the write that records the agent
//! awake, both on the wall clock. About three minutes.
//!
//! Needs DynamoDB Local (`AWS_ENDPOINT_URL`; scripts/test.sh starts it): without it this fails,
//! it does not skip.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use support::{demo, serving_with};
use tokio::sync::Semaphore;

const OWNERS: [&str; 4] = ["alice", "bob", "carol", "dave"];
const PER_OWNER: usize = 75;
/// Agents due the minute before, whose wakes measure the kind's readiness.
const WARM_UP: usize = 10;
/// What AgentKit takes from a Resume to the session Ready (`--session-ready-delay-ms`): the
/// readiness an owner waits for after the Resume.
const READINESS_MS: u64 = 1_500;
/// What every AgentKit call takes.
const LATENCY_MS: u64 = 150;
/// The share of Resumes AgentKit throttles (429), beside its rate limits.
const THROTTLED: f64 = 0.3;
/// The demo's recoverable codex Tool.
const TOOL: &str = "t-codex-recoverable";
/// Requests to serve at once while setting up.
const AT_ONCE: usize = 16;

fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    u64::try_from(since.as_millis()).expect("ms fit")
}

fn rfc3339(ms: u64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .expect("an instant");
    at.format(&time::format_description::well_known::Rfc3339)
        .expect("format")
}

fn epoch_ms(text: &str) -> u64 {
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{text:?}: {e}"));
    u64::try_from(at.unix_timestamp_nanos() / 1_000_000).expect("after 1970")
}

/// A daily UTC cron at the minute of `ms`.
fn daily_at(ms: u64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .expect("an instant");
    format!("{} {} * * *", at.minute(), at.hour())
}

/// One agent: its owner and id (a snapshot's UserSessionId).
#[derive(Clone)]
struct Agent {
    owner: &'static str,
    id: String,
}

fn agents(prefix: u128, count: usize, owners: &[&'static str]) -> Vec<Agent> {
    (0..count)
        .map(|i| {
            let owner = owners[i % owners.len()];
            Agent {
                owner,
                id: format!("studio-{owner}-{:032x}", prefix + i as u128),
            }
        })
        .collect()
}

/// The API as an admin, asked again as a client would on a retryable answer (429, 503 with
/// `Retry-After`).
struct Api {
    http: reqwest::Client,
    url: String,
}

impl Api {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let mut last = (0, Value::Null);
        for _ in 0..20 {
            let mut request = self
                .http
                .request(method.clone(), format!("{}{path}", self.url))
                .header("X-Snapwake-User", "root")
                .header("X-Snapwake-Admin", "1");
            if let Some(body) = body {
                request = request.json(body);
            }
            let answer = request.send().await.expect("serve answers");
            let status = answer.status().as_u16();
            let wait = answer
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            let json = answer.json().await.unwrap_or(Value::Null);
            last = (status, json);
            match (status, wait) {
                (429 | 503, Some(secs)) => {
                    tokio::time::sleep(Duration::from_secs(secs.clamp(1, 2))).await;
                }
                _ => return last,
            }
        }
        last
    }
}

async fn sim_post(http: &reqwest::Client, sim: &str, path: &str, body: &Value) -> Value {
    let answer = http
        .post(format!("{sim}{path}"))
        .json(body)
        .send()
        .await
        .expect("the simulator answers");
    assert!(answer.status().is_success(), "{path}: {}", answer.status());
    answer.json().await.expect("JSON")
}

/// PUT a daily wake at the minute of `at_ms` on each of `agents`; every answer names it.
async fn schedule_all(api: &Arc<Api>, agents: &[Agent], at_ms: u64) {
    let permits = Arc::new(Semaphore::new(AT_ONCE));
    let mut puts = tokio::task::JoinSet::new();
    for agent in agents {
        let (api, permits, id) = (api.clone(), permits.clone(), agent.id.clone());
        puts.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("open");
            let body = json!({"timezone": "UTC", "wake": daily_at(at_ms)});
            let path = format!("/v1/agents/codex/{id}/schedule");
            (id, api.send(reqwest::Method::PUT, &path, Some(&body)).await)
        });
    }
    while let Some(done) = puts.join_next().await {
        let (id, (status, body)) = done.expect("the PUT ran");
        assert_eq!(status, 200, "{id}: {body}");
        assert_eq!(body["next_wake_at"], rfc3339(at_ms), "{id}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hundred_agents_due_in_one_minute_are_awake_by_it_with_one_resume_each() {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    assert!(
        !endpoint.trim().is_empty(),
        "AWS_ENDPOINT_URL is not set: this test needs DynamoDB Local. Start it with \
         `eval \"$(scripts/start-dynamodb-local.sh)\"` (or run scripts/test.sh)"
    );
    let table = format!("snapwake-fleet-{}", uuid::Uuid::new_v4().simple());
    let server = serving_with(
        &demo(&[
            "--tick-every",
            "1s",
            "--session-ready-delay-ms",
            &READINESS_MS.to_string(),
            "--rate-limits",
            "agentkit",
        ]),
        &[
            "AGENTKIT_ENDPOINT",
            "SNAPWAKE_OPEN_URL",
            "SNAPWAKE_AGENTKIT_LIMITS",
            "SNAPWAKE_SIM_RATE_LIMITS",
        ],
        &[("SNAPWAKE_TABLE", &table)],
    );
    let sim = server.simulator();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("a client");
    let api = Arc::new(Api {
        http: http.clone(),
        url: server.endpoint.clone(),
    });

    // The fleet asleep, each with a snapshot, unknown to snapwake yet (made by the Studio):
    // the schedule PUT finds each the way a wake would.
    let warm_up = agents(0x000a_11ce_0000, WARM_UP, &["alice"]);
    let fleet = agents(0x000f_1ee7_0000, OWNERS.len() * PER_OWNER, &OWNERS);
    let snapshot_of = |agent: &Agent| format!("snap-{}", &agent.id[agent.id.len() - 8..]);
    let made = rfc3339(now_ms() - 2 * 3_600_000);
    let seeds: Vec<Value> = warm_up
        .iter()
        .chain(&fleet)
        .map(|agent| {
            json!({
                "tool_id": TOOL,
                "snapshot_id": snapshot_of(agent),
                "session_id": format!("s-{}", &agent.id[agent.id.len() - 8..]),
                "user_session_id": agent.id,
                "status": "Ready",
                "reason": "Expired",
                "created_at": made,
                "session_metadata": [{"Key": "Username", "Value": agent.owner}],
            })
        })
        .collect();
    sim_post(&http, &sim, "/_sim/snapshots", &Value::Array(seeds)).await;

    // The warm-up's minute at least 30 s ahead (time to set up), the fleet's two minutes
    // later: enough lead, from the readiness measured then, for the budget to start 300 wakes
    // at the slowest AgentKit's 429s can make it (docs/schedules.md, "Ready at the minute").
    let warm_minute = (now_ms() + 30_000).div_ceil(60_000) * 60_000;
    let minute = warm_minute + 120_000;
    schedule_all(&api, &warm_up, warm_minute).await;
    schedule_all(&api, &fleet, minute).await;
    let set_up_by = now_ms();
    assert!(
        set_up_by + 5_000 < warm_minute,
        "setting up took until {} (the warm-up is due at {})",
        rfc3339(set_up_by),
        rfc3339(warm_minute)
    );

    // From here, AgentKit is slow and throttles.
    sim_post(
        &http,
        &sim,
        "/_sim/faults",
        &json!({"action": null, "latency_ms": LATENCY_MS, "trigger": "always"}),
    )
    .await;
    sim_post(
        &http,
        &sim,
        "/_sim/faults",
        &json!({
            "action": "ResumeSessionFromSnapshot",
            "error": {"code": "Throttling", "status": 429, "retry_after": 1},
            "trigger": {"rate": THROTTLED},
        }),
    )
    .await;

    // The minute, the readiness, 5 s: every agent of the fleet awake by then.
    let deadline_ms = minute + READINESS_MS + 5_000;
    tokio::time::sleep(Duration::from_millis(deadline_ms.saturating_sub(now_ms()))).await;
    let checked = Instant::now();
    let permits = Arc::new(Semaphore::new(AT_ONCE));
    let mut views = tokio::task::JoinSet::new();
    for agent in &fleet {
        let (api, permits, id) = (api.clone(), permits.clone(), agent.id.clone());
        views.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("open");
            let path = format!("/v1/agents/codex/{id}");
            (id, api.send(reqwest::Method::GET, &path, None).await)
        });
    }
    let mut late = Vec::new();
    let mut latest_resumed = 0;
    while let Some(done) = views.join_next().await {
        let (id, (status, view)) = done.expect("the GET ran");
        assert_eq!(status, 200, "{id}: {view}");
        // Resumed (AgentKit's CreatedAt of the new session, whole seconds) by the minute + 5 s:
        // Ready by the minute + readiness + 5 s.
        let resumed = view["session"]["created_at"].as_str().map(epoch_ms);
        match (view["state"].as_str(), resumed) {
            (Some("awake"), Some(at)) if at <= minute + 5_000 => {
                latest_resumed = latest_resumed.max(at);
            }
            _ => late.push(format!("{id}: {} {}", view["state"], view["session"])),
        }
    }
    let counters = http
        .get(format!("{sim}/_sim/counters"))
        .send()
        .await
        .expect("counters")
        .json::<Value>()
        .await
        .expect("JSON");
    assert!(
        late.is_empty(),
        "{} of {} not awake by {} (checked in {:?}): {:?}; AgentKit: {}",
        late.len(),
        fleet.len(),
        rfc3339(deadline_ms),
        checked.elapsed(),
        &late[..late.len().min(5)],
        counters["actions"]["ResumeSessionFromSnapshot"]
    );
    eprintln!(
        "all {} awake; the last resumed at {} (the minute {}); AgentKit's Resumes: {}, faults \
         fired: {}",
        fleet.len(),
        rfc3339(latest_resumed),
        rfc3339(minute),
        counters["actions"]["ResumeSessionFromSnapshot"],
        counters["faults_fired"]
    );

    // One Resume each, and one live session each; AgentKit did throttle some.
    for agent in warm_up.iter().chain(&fleet) {
        assert_eq!(
            counters["resumes"][snapshot_of(agent)],
            1,
            "{}: Resumes of its snapshot",
            agent.id
        );
        assert_eq!(
            counters["live_sessions"][&agent.id], 1,
            "{}: live sessions",
            agent.id
        );
    }
    let resumes = &counters["actions"]["ResumeSessionFromSnapshot"];
    let refused =
        resumes["received"].as_u64().unwrap_or(0) - resumes["succeeded"].as_u64().unwrap_or(0);
    assert!(refused > 0, "no Resume was throttled: {resumes}");
}
