//! A first Monday 08:30 through `snapwake serve` on DynamoDB Local (docs/schedules.md, "At
//! fleet scale", "A first morning is a morning"): 300 agents of four owners whose wake
//! schedules come due in one minute, no schedule ever run before (nothing measured: the lead is
//! planned from the prior), AgentKit at 150 ms a call with its assumed account-wide limits on
//! and 30% of the fleet's Resumes throttled besides, and serve's own tick as it runs by default
//! (at the start of every minute, as EventBridge Scheduler does). Every agent is awake (its
//! view says so) by the minute + its readiness + 5 s, with one Resume each; and people waking
//! agents of their own while the fleet's wakes go out and around the minute are answered
//! ahead of the fleet's line (within the readiness + 5 s), as snapwake's clients ask. How
//! quickly (a p99 within the readiness + 1.5 s, BENCHMARKS.md's Monday) is measured by
//! `cargo bench --bench monday`, not asserted here: on CI's two shared cores one of some fifty
//! wakes over four runs took 3.6 s, and a test that fails by chance blocks every landing.
//! Behind the fleet's line a person would wait for its 300 Resumes at the background lane's 14
//! a second: 20 s or more.
//!
//! Real time, not a moved simulator clock: leases and the tick's minutes are both on the wall
//! clock. About five minutes.
//!
//! Runs on a DynamoDB Local of its own (scripts/start-dynamodb-local.sh, on a free port,
//! stopped at the end): DynamoDB Local runs every request on one SQLite thread, and one that
//! has served the rest of the suite's hundreds of tables answers this burst ten times slower
//! (schedule PUTs 1.4 s instead of 0.13 s), which measures the other tests, not serve. Needs
//! java and npm as scripts/test.sh does: without them this fails, it does not skip.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use support::{demo, serving_with};
use tokio::sync::Semaphore;

const OWNERS: [&str; 4] = ["alice", "bob", "carol", "dave"];
const PER_OWNER: usize = 75;
/// Agents people wake themselves: the first [`IN_THE_BURST`] while the fleet's wakes go out,
/// the others around the minute.
const PEOPLES: usize = 12;
const IN_THE_BURST: usize = 4;
/// What AgentKit takes from a Resume to the session Ready (`--session-ready-delay-ms`): the
/// readiness an owner waits for after the Resume.
const READINESS_MS: u64 = 1_500;
/// A person's wake past the readiness by more than this waited behind the fleet's line.
const AHEAD_OF_THE_LINE_MS: u64 = 5_000;
/// What every AgentKit call takes.
const LATENCY_MS: u64 = 150;
/// The share of the fleet's Resumes AgentKit throttles (429), beside its rate limits (a
/// person's Resume is only limited by those: their wake's time is snapwake's to answer for).
const THROTTLED: f64 = 0.3;
/// What the fleet's snapshot ids (and no person's) contain.
const FLEET_SNAPSHOTS: &str = "snap-1ee7";
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

/// An answer's `Retry-After`, in seconds.
fn retry_after(answer: &reqwest::Response) -> Option<u64> {
    answer
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
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
            let wait = retry_after(&answer);
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

/// Wait for the refresh to have indexed `count` agents (everyone's list, a page of them).
async fn await_indexed(api: &Api, count: usize) {
    let started = Instant::now();
    loop {
        let mut listed = 0;
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(c) => format!("/v1/agents?owner=*&limit=100&cursor={c}"),
                None => "/v1/agents?owner=*&limit=100".to_string(),
            };
            let (status, page) = api.send(reqwest::Method::GET, &path, None).await;
            assert_eq!(status, 200, "{page}");
            listed += page["agents"].as_array().map_or(0, Vec::len);
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
        if listed >= count {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(150),
            "the refresh indexed {listed} of {count} agents in 150 s"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// A DynamoDB Local of this test's own, stopped when dropped.
struct OwnDynamoDbLocal {
    port: String,
    endpoint: String,
}

impl OwnDynamoDbLocal {
    fn scripts() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts")
    }

    fn start() -> OwnDynamoDbLocal {
        let out = std::process::Command::new(Self::scripts().join("start-dynamodb-local.sh"))
            .env_remove("DYNAMODB_LOCAL_PORT")
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("run scripts/start-dynamodb-local.sh");
        assert!(
            out.status.success(),
            "scripts/start-dynamodb-local.sh failed: this test needs java and npm"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let exported = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .map(str::to_string)
                .unwrap_or_else(|| panic!("no {name} in {text}"))
        };
        OwnDynamoDbLocal {
            port: exported("DYNAMODB_LOCAL_PORT"),
            endpoint: exported("AWS_ENDPOINT_URL"),
        }
    }
}

impl Drop for OwnDynamoDbLocal {
    fn drop(&mut self) {
        let _ = std::process::Command::new(Self::scripts().join("stop-dynamodb-local.sh"))
            .env("DYNAMODB_LOCAL_PORT", &self.port)
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hundred_agents_due_in_one_minute_are_awake_by_it_with_one_resume_each() {
    let dynamodb = OwnDynamoDbLocal::start();
    let table = format!("snapwake-fleet-{}", uuid::Uuid::new_v4().simple());
    let ready_ms = READINESS_MS.to_string();
    let mut args = demo(&[
        "--session-ready-delay-ms",
        &ready_ms,
        "--rate-limits",
        "agentkit",
    ]);
    // serve as it runs by default: its sweep hourly (the demo's is off), its refresh every
    // minute, which indexes what the Studio made.
    let every = args
        .iter()
        .position(|a| *a == "--sweep-every")
        .expect("demo's")
        + 1;
    args[every] = "1h";
    let server = serving_with(
        &args,
        &[
            "AGENTKIT_ENDPOINT",
            "SNAPWAKE_OPEN_URL",
            "SNAPWAKE_AGENTKIT_LIMITS",
            "SNAPWAKE_SIM_RATE_LIMITS",
        ],
        &[
            ("SNAPWAKE_TABLE", &table),
            ("AWS_ENDPOINT_URL", &dynamodb.endpoint),
            ("AWS_ACCESS_KEY_ID", "local"),
            ("AWS_SECRET_ACCESS_KEY", "local"),
            ("AWS_REGION", "us-east-1"),
        ],
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
    // the schedule PUT finds each the way a wake would. And a few agents of theirs that people
    // wake themselves.
    let fleet = agents(0x000f_1ee7_0000, OWNERS.len() * PER_OWNER, &OWNERS);
    let peoples = agents(0x0000_9e09_0000, PEOPLES, &OWNERS);
    let snapshot_of = |agent: &Agent| format!("snap-{}", &agent.id[agent.id.len() - 8..]);
    let made = rfc3339(now_ms() - 2 * 3_600_000);
    let seeds: Vec<Value> = fleet
        .iter()
        .chain(&peoples)
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
    await_indexed(&api, fleet.len() + peoples.len()).await;

    // Far enough ahead that the lead (nothing measured: the prior readiness, and the time the
    // budget needs for 300 wakes) starts after the schedules are set.
    let lead = snapwake::schedule::wake_lead_ms(
        None,
        fleet.len(),
        snapwake::schedule::plan::DEFAULT_WAKES_PER_SECOND,
    );
    // 300 PUTs, 16 at a time, take a few seconds on a DynamoDB Local of one's own; 35 s is room
    // for a slow one (the assertion below says if it was not), and every minute of room is a
    // minute of CI.
    let minute = (now_ms() + lead + 35_000).div_ceil(60_000) * 60_000;
    schedule_all(&api, &fleet, minute).await;
    let set_up_by = now_ms();
    assert!(
        set_up_by + 5_000 < minute - lead,
        "setting up took until {} (the wakes start at {})",
        rfc3339(set_up_by),
        rfc3339(minute - lead)
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
            "naming": FLEET_SNAPSHOTS,
        }),
    )
    .await;

    // People wake agents of their own, a few seconds apart, as snapwake's clients do (held
    // with `Prefer: wait`, asked again after a 202's Retry-After): some while the fleet's
    // wakes go out (from the tick that starts them), however many are waiting for AgentKit's
    // rate limits; the others around the minute. Each is answered awake ahead of the fleet's
    // line: within the readiness and 5 s (the module's docs say why not 1.5 s here).
    let burst = (minute - lead).div_ceil(60_000) * 60_000;
    let mut people = tokio::task::JoinSet::new();
    for (i, agent) in peoples.iter().enumerate() {
        let at = match i.checked_sub(IN_THE_BURST) {
            None => burst + 1_000 + 3_000 * i as u64,
            Some(j) => minute - 8_000 + 2_000 * j as u64,
        };
        let (url, owner, id) = (server.endpoint.clone(), agent.owner, agent.id.clone());
        let http = http.clone();
        people.spawn(async move {
            tokio::time::sleep(Duration::from_millis(at.saturating_sub(now_ms()))).await;
            let asked = Instant::now();
            let path = format!("{url}/v1/agents/codex/{id}/resume");
            loop {
                let answer = http
                    .post(&path)
                    .header("X-Snapwake-User", owner)
                    .header("Prefer", "wait=10")
                    .send()
                    .await
                    .expect("serve answers");
                let status = answer.status().as_u16();
                let wait = retry_after(&answer);
                if status == 200 || wait.is_none() {
                    return (id, status, asked.elapsed());
                }
                tokio::time::sleep(Duration::from_secs(wait.unwrap_or(1))).await;
            }
        });
    }

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
    let mut earliest_resumed = u64::MAX;
    while let Some(done) = views.join_next().await {
        let (id, (status, view)) = done.expect("the GET ran");
        assert_eq!(status, 200, "{id}: {view}");
        let resumed = view["session"]["created_at"].as_str().map(epoch_ms);
        match (view["state"].as_str(), resumed) {
            (Some("awake"), Some(at)) => earliest_resumed = earliest_resumed.min(at),
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
        "all {} awake; the first resumed at {} (the minute {}, the lead {} s); AgentKit's \
         Resumes: {}, faults fired: {}",
        fleet.len(),
        rfc3339(earliest_resumed),
        rfc3339(minute),
        lead / 1000,
        counters["actions"]["ResumeSessionFromSnapshot"],
        counters["faults_fired"]
    );
    let mut slow = Vec::new();
    while let Some(done) = people.join_next().await {
        let (id, status, took) = done.expect("the person's wake ran");
        assert_eq!(status, 200, "{id}");
        eprintln!("a person's wake: {took:?}");
        if took > Duration::from_millis(READINESS_MS + AHEAD_OF_THE_LINE_MS) {
            slow.push(format!("{id}: {took:?}"));
        }
    }
    assert!(
        slow.is_empty(),
        "people's wakes slower than the readiness + 5 s, as if behind the fleet: {slow:?}"
    );

    // One Resume each, and one live session each; AgentKit did throttle some.
    for agent in fleet.iter().chain(&peoples) {
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
