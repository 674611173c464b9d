//! Peak memory of the resume function under the wake storm (docs/architecture.md, "Quality bars and
//! where they are checked": ≤ 40 MB).
//!
//! The parent process starts the simulator and a DynamoDB Local table and seeds an asleep
//! agent; then it runs itself again as a child that holds nothing but what the resume Lambda
//! holds (the handler with its DynamoDB and AgentKit clients, on a `#[tokio::main]`-shaped
//! runtime). The child reads its own `VmHWM` from `/proc/self/status` at the end, so the
//! simulator's memory is not counted. Two shapes of storm:
//!
//! 1. Lambda-shaped: the child answers resumes one at a time (a container's concurrency is 1)
//!    while the parent sends the other 499 resumes of the storm;
//! 2. all in one process: the child sends all 500 at once — harsher than Lambda can be.
//!
//! Run by `scripts/bench.sh`, which starts DynamoDB Local; prints Markdown.

use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::Duration;

use snapwake::wake::WakeSettings;
use snapwake_tests::*;

const STORM: usize = 500;
const READY_DELAY: Duration = Duration::from_secs(2);
/// Resumes the Lambda-shaped child answers, one after the other.
const SEQUENTIAL: usize = 20;
const CHILD: &str = "SNAPWAKE_BENCH_RSS_CHILD";

/// A `kB` line of `/proc/self/status`, in kB.
fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

/// The child: the resume handler and `requests` resumes of the agent, `concurrency` at a
/// time; answers one line `rss_before hwm ok sessions`.
/// Each resume is held until the agent is awake (`Prefer: wait=20`): the storm this bench has
/// always measured, every caller open for the whole boot (the worst case for memory).
fn held(request: lambda_http::Request) -> lambda_http::Request {
    prefer_wait(request, 20)
}

async fn child(
    endpoint: String,
    table: String,
    agent_id: String,
    owner: String,
    requests: usize,
    concurrency: usize,
) {
    let function = Arc::new(resume_fn(
        dynamo_table(&table, false).await,
        client(&endpoint),
        WakeSettings::default(),
    ));
    let before = status_kb("VmRSS").unwrap_or(0);
    let path = Arc::new(format!("/v1/agents/codex/{agent_id}/resume"));
    let owner = Arc::new(owner);
    let queue = Arc::new(std::sync::atomic::AtomicUsize::new(requests));
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (f, p, o, q) = (function.clone(), path.clone(), owner.clone(), queue.clone());
            tokio::spawn(async move {
                let mut answers = Vec::new();
                while q.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1)).is_ok() {
                    let (status, body) = answer(
                        &f.handle(held(request("POST", &p, Who::User(&o), None)))
                            .await,
                    );
                    answers.push((
                        status,
                        body["session"]["session_id"].as_str().map(str::to_string),
                    ));
                }
                answers
            })
        })
        .collect();
    let mut ok = 0;
    let mut sessions = std::collections::HashSet::new();
    for w in workers {
        for (status, sid) in w.await.expect("worker") {
            ok += usize::from(status == 200);
            sessions.insert(sid);
        }
    }
    let hwm = status_kb("VmHWM").unwrap_or(0);
    println!("{before} {hwm} {ok} {}", sessions.len());
}

/// What one child measured.
struct Measured {
    before: u64,
    hwm: u64,
    ok: u64,
    sessions: u64,
    resumes: u64,
}

/// Run a child sending `requests` resumes `concurrency` at a time of a fresh asleep agent,
/// while this process sends `alongside` concurrent resumes of the same agent.
async fn run_child(
    world: &World,
    table: &str,
    requests: usize,
    concurrency: usize,
    alongside: usize,
) -> Measured {
    let owner = "alice";
    let (agent_id, snapshot_id) = world.asleep_agent(owner, "Storm");
    let exe = std::env::current_exe().expect("own path");
    let mut command = std::process::Command::new(exe);
    command
        .env(CHILD, "1")
        .env("BENCH_SIM_ENDPOINT", world.sim.endpoint())
        .env("BENCH_TABLE", table)
        .env("BENCH_AGENT", &agent_id)
        .env("BENCH_OWNER", owner)
        .env("BENCH_REQUESTS", requests.to_string())
        .env("BENCH_CONCURRENCY", concurrency.to_string());
    // The rest of the storm, from this process (other Lambda containers, as it were).
    let others = Arc::new(resume_fn(
        dynamo_table(table, false).await,
        world.client(),
        WakeSettings::default(),
    ));
    let storm: Vec<_> = (0..alongside)
        .map(|_| {
            let f = others.clone();
            let p = format!("/v1/agents/codex/{agent_id}/resume");
            tokio::spawn(async move {
                f.handle(held(request("POST", &p, Who::User(owner), None)))
                    .await
            })
        })
        .collect();
    // Waiting on the child off the runtime, so the simulator keeps serving it.
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .expect("run the child");
    for t in storm {
        let _ = t.await;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<u64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [before, hwm, ok, sessions] = fields[..] else {
        panic!(
            "child answered {text:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    Measured {
        before,
        hwm,
        ok,
        sessions,
        resumes: world.sim.control().counters().resumes_of(&snapshot_id),
    }
}

async fn parent() {
    let world = World::start(READY_DELAY).await;
    let table = format!("bench-rss-{}", uuid::Uuid::new_v4().simple());
    let store = dynamo_table(&table, true).await;
    world.register(&store).await;
    // A Lambda container: one request at a time, while 499 others storm the same agent.
    let one = run_child(&world, &table, SEQUENTIAL, 1, STORM - 1).await;
    // Harsher than Lambda can be: the whole storm inside one process.
    let all = run_child(&world, &table, STORM, STORM, 0).await;
    println!("## Peak memory of the resume function under the wake storm\n");
    println!(
        "A child process holding only the resume handler (DynamoDB Local and simulated-AgentKit \
         clients, a multi-thread tokio runtime as `#[tokio::main]` builds here) sends resumes of \
         one asleep agent through `Resume::handle` (readiness delay {} s); the simulator runs in \
         the parent and is not counted. `VmRSS` before the first request and `VmHWM` at the end, \
         from `/proc/self/status` of the child. Two shapes: *Lambda-shaped* — the child answers \
         {SEQUENTIAL} resumes one at a time (a container's concurrency is 1) while the parent \
         sends the other {} of the storm concurrently; *all in one process* — the child sends all \
         {STORM} at once, which no Lambda container does. The bench binary is built with the \
         `bench` profile (no LTO), not the stripped release binary.\n",
        READY_DELAY.as_secs(),
        STORM - 1
    );
    println!("| measure | Lambda-shaped (1 at a time) | all {STORM} in one process | budget |");
    println!("|---|---|---|---|");
    println!(
        "| RSS before the first request (handler built) | {} | {} | |",
        mb(one.before),
        mb(all.before)
    );
    println!(
        "| peak RSS (VmHWM) | {} | {} | ≤ 40 MB |",
        mb(one.hwm),
        mb(all.hwm)
    );
    println!(
        "| child's requests answered 200 | {} of {SEQUENTIAL} | {} of {STORM} | |",
        one.ok, all.ok
    );
    println!(
        "| distinct SessionIds the child saw | {} | {} | 1 |",
        one.sessions, all.sessions
    );
    println!(
        "| ResumeSessionFromSnapshot of the agent | {} | {} | 1 |",
        one.resumes, all.resumes
    );
    println!();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if std::env::var_os(CHILD).is_some() {
        let var = |n: &str| std::env::var(n).unwrap_or_default();
        let number = |n: &str| var(n).parse().unwrap_or(1);
        rt.block_on(child(
            var("BENCH_SIM_ENDPOINT"),
            var("BENCH_TABLE"),
            var("BENCH_AGENT"),
            var("BENCH_OWNER"),
            number("BENCH_REQUESTS"),
            number("BENCH_CONCURRENCY"),
        ));
    } else {
        rt.block_on(parent());
    }
}
