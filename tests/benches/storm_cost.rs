//! What a wake storm costs (docs/wake-protocol.md, "Short requests"): callers wake one asleep
//! agent the way a browser tab or a script does — send the resume, and on a 202 wait its
//! `Retry-After`, then ask again — until each has its 200. Measured per storm: the time each
//! caller waited for its 200, the seconds its requests were open (what Lambda bills and what
//! API Gateway counts against concurrency), the most requests open at once, and the Resumes,
//! AgentKit and DynamoDB calls. Then the same callers saying `Prefer: wait=20` (held until the
//! agent is awake), for comparison.
//!
//! Callers arrive spread evenly over the first second (people and tabs arriving "at once"):
//! callers that all arrive in the same millisecond are all open in that millisecond, whatever
//! the server does.
//!
//! Run by `scripts/bench.sh` (DynamoDB Local started by it), which writes `BENCHMARKS.md` from
//! what this prints (Markdown). It uses nothing but `Resume::handle` and the simulator, so the
//! same file measures an older commit too (`scripts/bench_against.py`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_tests::counting::CountingStore;
use snapwake_tests::*;

const READY_DELAY: Duration = Duration::from_secs(2);
/// Callers arrive evenly over this.
const ARRIVALS: Duration = Duration::from_secs(1);
/// The resume function's memory in the template (`infra/template.yaml`), for GB-seconds.
const MEMORY_GB: f64 = 0.25;
/// A caller that has no 200 after this gives up (counted as an error).
const PATIENCE: Duration = Duration::from_secs(60);

type Function =
    Resume<CountingStore<snapwake::store::dynamo::DynamoStore>, snapwake::agentkit::AgentKitClient>;

/// What one storm measured.
struct CostRun {
    callers: usize,
    resumes: u64,
    errors: usize,
    sessions: usize,
    /// From each caller's arrival to its 200.
    to_200: Vec<Duration>,
    /// Every request's duration, summed.
    request_time: Duration,
    /// What Lambda would bill: each request rounded up to the millisecond.
    billed_ms: u64,
    requests: u64,
    peak_open: usize,
    agentkit: Vec<(String, u64)>,
    store_calls: u64,
    live: u64,
}

/// The POST of a resume, saying `Prefer: wait=<s>` when `prefer` is set.
fn resume_request(agent_id: &str, prefer: Option<u64>) -> lambda_http::Request {
    let mut req = alices_request("POST", &format!("/v1/agents/codex/{agent_id}/resume"));
    if let Some(s) = prefer {
        let value = format!("wait={s}");
        req.headers_mut()
            .insert("prefer", value.parse().expect("header value"));
    }
    req
}

/// What every caller's requests add up to: how many are open at once (and the most there
/// ever were), their summed duration, what Lambda would bill, how many were sent.
#[derive(Default)]
struct Tally {
    open: AtomicUsize,
    peak: AtomicUsize,
    open_ns: AtomicU64,
    billed_ms: AtomicU64,
    requests: AtomicU64,
}

impl Tally {
    fn enter(&self) {
        let n = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
    }

    fn leave(&self, took: Duration) {
        self.open.fetch_sub(1, Ordering::SeqCst);
        self.open_ns
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        self.billed_ms
            .fetch_add(took.as_micros().div_ceil(1000) as u64, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
    }
}

/// One caller: arrive at `arrive`, ask until 200 honouring `Retry-After`. Its time to 200
/// (`None`: it never got one) and the session it was answered.
async fn caller(
    function: Arc<Function>,
    agent_id: String,
    prefer: Option<u64>,
    arrive: Instant,
    tally: Arc<Tally>,
) -> (Option<Duration>, String) {
    tokio::time::sleep_until(arrive.into()).await;
    let arrived = Instant::now();
    loop {
        tally.enter();
        let sent = Instant::now();
        let resp = function.handle(resume_request(&agent_id, prefer)).await;
        tally.leave(sent.elapsed());
        let retry_after = header_of(&resp, "retry-after").and_then(|v| v.parse::<u64>().ok());
        let (status, body) = answer(&resp);
        match status {
            200 => {
                let sid = body["session"]["session_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                return (Some(arrived.elapsed()), sid);
            }
            // Still waking, or a retryable refusal that says when to come back.
            202 | 409 | 429 | 503 if arrived.elapsed() < PATIENCE => {
                tokio::time::sleep(Duration::from_secs(retry_after.unwrap_or(1))).await;
            }
            _ => return (None, String::new()),
        }
    }
}

async fn storm(
    world: &World,
    function: &Arc<Function>,
    callers: usize,
    prefer: Option<u64>,
) -> CostRun {
    let (agent_id, _) = world.asleep_agent("alice", "Storm");
    let calls = function.store.calls.clone();
    let store_before = calls.total();
    let ctl = world.sim.control();
    ctl.reset_counters();
    let tally = Arc::new(Tally::default());
    let start = Instant::now() + Duration::from_millis(50);
    let tasks: Vec<_> = (0..callers)
        .map(|i| {
            let arrive = start + ARRIVALS.mul_f64(i as f64 / callers as f64);
            tokio::spawn(caller(
                function.clone(),
                agent_id.clone(),
                prefer,
                arrive,
                tally.clone(),
            ))
        })
        .collect();
    let mut to_200 = Vec::new();
    let mut sessions = std::collections::HashSet::new();
    let mut errors = 0;
    for t in tasks {
        match t.await.expect("caller task") {
            (Some(took), sid) => {
                to_200.push(took);
                sessions.insert(sid);
            }
            (None, _) => errors += 1,
        }
    }
    to_200.sort();
    let counters = ctl.counters();
    CostRun {
        callers,
        resumes: counters.received("ResumeSessionFromSnapshot"),
        errors,
        sessions: sessions.len(),
        to_200,
        request_time: Duration::from_nanos(tally.open_ns.load(Ordering::Relaxed)),
        billed_ms: tally.billed_ms.load(Ordering::Relaxed),
        requests: tally.requests.load(Ordering::Relaxed),
        peak_open: tally.peak.load(Ordering::SeqCst),
        agentkit: counters
            .actions
            .iter()
            .map(|(a, c)| (a.clone(), c.received))
            .filter(|(_, n)| *n > 0)
            .collect(),
        store_calls: calls.total() - store_before,
        live: counters.live_sessions_of(&agent_id),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// One table of runs side by side.
fn print(runs: &[(&str, CostRun)]) {
    let header: Vec<&str> = runs.iter().map(|(name, _)| *name).collect();
    println!("| measure | {} | bar (no `Prefer`) |", header.join(" | "));
    println!("|---|{}---|", "---|".repeat(runs.len()));
    let row = |what: &str, bar: &str, value: &dyn Fn(&CostRun) -> String| {
        let cells: Vec<String> = runs.iter().map(|(_, r)| value(r)).collect();
        println!("| {what} | {} | {bar} |", cells.join(" | "));
    };
    let bar_p99 = format!("≤ {}", secs(READY_DELAY + Duration::from_millis(1500)));
    row("callers answered 200", "all", &|r| {
        format!("{} of {}", r.to_200.len(), r.callers)
    });
    row("errors", "0", &|r| r.errors.to_string());
    row("ResumeSessionFromSnapshot sent", "1", &|r| {
        r.resumes.to_string()
    });
    row("distinct SessionIds answered", "1", &|r| {
        r.sessions.to_string()
    });
    row("time to 200, p50", "", &|r| {
        secs(percentile(&r.to_200, 0.5))
    });
    row("time to 200, p99", &bar_p99, &|r| {
        secs(percentile(&r.to_200, 0.99))
    });
    row("time to 200, max", "", &|r| {
        secs(r.to_200.last().copied().unwrap_or_default())
    });
    row("request-seconds per caller", "≤ 0.25 s", &|r| {
        format!("{:.3} s", r.request_time.as_secs_f64() / r.callers as f64)
    });
    row("requests per caller", "", &|r| {
        format!("{:.2}", r.requests as f64 / r.callers as f64)
    });
    row("peak requests open at once", "≤ 10% of callers", &|r| {
        format!(
            "{} ({:.0}%)",
            r.peak_open,
            100.0 * r.peak_open as f64 / r.callers as f64
        )
    });
    row("Lambda GB-seconds (256 MB, billed per ms)", "", &|r| {
        format!("{:.2}", r.billed_ms as f64 / 1000.0 * MEMORY_GB)
    });
    row("AgentKit calls in all", "≤ 15", &|r| {
        r.agentkit.iter().map(|(_, n)| n).sum::<u64>().to_string()
    });
    row("— GetSession", "", &|r| {
        r.agentkit
            .iter()
            .find(|(a, _)| a == "GetSession")
            .map_or(0, |(_, n)| *n)
            .to_string()
    });
    row("DynamoDB calls per caller", "", &|r| {
        format!("{:.2}", r.store_calls as f64 / r.callers as f64)
    });
    row("live sessions afterwards", "1", &|r| r.live.to_string());
    println!();
}

/// Unmeasured storms first: DynamoDB Local is a JVM whose first thousands of requests run
/// half-compiled (see the wake bench).
async fn warm_up(world: &World, function: &Arc<Function>) {
    for _ in 0..3 {
        let _ = storm(world, function, 500, None).await;
        let _ = storm(world, function, 200, Some(20)).await;
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let rt = multi_thread_runtime(8);
    rt.block_on(async {
        let world = World::start(READY_DELAY).await;
        let store = CountingStore::new(dynamo_store("bench-storm-cost").await);
        world.register(&store).await;
        let function = Arc::new(resume_fn(store, world.client(), WakeSettings::default()));
        warm_up(&world, &function).await;
        let short_500 = storm(&world, &function, 500, None).await;
        let short_100 = storm(&world, &function, 100, None).await;
        let long_500 = storm(&world, &function, 500, Some(20)).await;
        let long_100 = storm(&world, &function, 100, Some(20)).await;

        println!("## What a wake storm costs: callers honouring `Retry-After`\n");
        println!(
            "`cargo bench -p snapwake-tests --bench storm_cost`. DynamoDB Local + simulated AgentKit over loopback HTTP, session readiness {} after the Resume, one process (8 worker threads) standing in for the function's instances. Each caller arrives at its moment of the first {} (evenly spread), sends the resume, and on a 202 waits its `Retry-After` and asks again, until its 200. *Time to 200* runs from the caller's arrival; *request-seconds* are the time its requests were open, which is what Lambda bills and what API Gateway's concurrency counts; *peak open* is the concurrency such a storm needs deployed. Measured after 6 unmeasured storms that warm DynamoDB Local's JVM.\n",
            secs(READY_DELAY),
            secs(ARRIVALS)
        );
        print(&[
            ("500 callers", short_500),
            ("100 callers", short_100),
            ("500, `Prefer: wait=20`", long_500),
            ("100, `Prefer: wait=20`", long_100),
        ]);
    });
}
