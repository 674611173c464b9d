//! Cold start to the first answer: what a person waits for when their request lands on a new
//! container (docs/architecture.md, "Quality bars and where they are checked").
//!
//! `scripts/cold_start.py` stops the clock at the first Runtime API `next`. This one goes on
//! to the first answered invocation, for the resume and list release binaries: each is
//! started against the fake Runtime API of `snapwake-tests`, handed one API Gateway event at
//! its first `next`, and timed until it posts the answer. It reads DynamoDB Local and calls the
//! simulator, each through a loopback TCP proxy that notes when the first request's first
//! byte went up and its answer's first byte came back — so the parts are seen from outside
//! the binary, as the network sees them:
//!
//! - **init**: exec → first `next` (configuration, clients, credentials);
//! - **to DynamoDB**: the event handed over → the first DynamoDB request (routing, identity,
//!   the SDK's first-use work: endpoint and credential resolution);
//! - **DynamoDB**: that request → its answer (connect and DynamoDB Local's time);
//! - **to AgentKit**: the event handed over → the first AgentKit request;
//! - **AgentKit**: that request → its answer (connect, the simulator's time);
//! - **answered**: exec → the answer posted.
//!
//! A resume wakes an asleep agent (simulator readiness 0: the session is Ready at the first
//! poll); a list lists its owner's agents. Needs `SNAPWAKE_BENCH_BINARIES` (the directory of
//! the release binaries; `scripts/bench.sh` sets it) and DynamoDB Local; prints Markdown.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use snapwake_sim::SimConfig;
use snapwake_tests::runtime_api::{Answer, RuntimeApi};
use snapwake_tests::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const RUNS: usize = 5;
const BINARIES: &str = "SNAPWAKE_BENCH_BINARIES";

/// When the first request through a proxy began, and when its answer began.
#[derive(Clone, Copy, Default)]
struct First {
    request: Option<Instant>,
    answer: Option<Instant>,
}

/// A loopback TCP proxy that notes the first request and answer bytes since the last reset.
struct TimingProxy {
    addr: SocketAddr,
    first: Arc<Mutex<First>>,
}

impl TimingProxy {
    async fn start(upstream: SocketAddr) -> TimingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let first = Arc::new(Mutex::new(First::default()));
        let noted = first.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                let (up, down) = (noted.clone(), noted.clone());
                tokio::spawn(pipe(cr, sw, move |at| {
                    let mut f = up.lock().expect("first");
                    f.request.get_or_insert(at);
                }));
                tokio::spawn(pipe(sr, cw, move |at| {
                    let mut f = down.lock().expect("first");
                    if f.request.is_some() {
                        f.answer.get_or_insert(at);
                    }
                }));
            }
        });
        TimingProxy { addr, first }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn reset(&self) {
        *self.first.lock().expect("first") = First::default();
    }

    fn first(&self) -> First {
        *self.first.lock().expect("first")
    }
}

/// Copy bytes one way, calling `seen` with the arrival time of every chunk.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    seen: impl Fn(Instant),
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                seen(Instant::now());
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}

/// One run's times, in milliseconds from exec.
struct Run {
    init: f64,
    to_dynamo: f64,
    dynamo: f64,
    to_agentkit: f64,
    agentkit: f64,
    answered: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

struct Bench {
    world: World,
    table: String,
    runtime: RuntimeApi,
    dynamo: TimingProxy,
    agentkit: TimingProxy,
    binaries: std::path::PathBuf,
}

impl Bench {
    /// Start `binary`, hand it `event` and time it; answers the run and the HTTP status.
    async fn run(&self, binary: &str, event: &Value) -> (Run, u16) {
        self.runtime.forget_next();
        self.dynamo.reset();
        self.agentkit.reset();
        let credentials = SimConfig::default().credentials;
        let mut command = tokio::process::Command::new(self.binaries.join(binary));
        command
            .env_clear()
            .envs(self.runtime.environment(binary))
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("SNAPWAKE_TABLE", &self.table)
            .env("AWS_ENDPOINT_URL", self.dynamo.url())
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "local")
            .env("AWS_SECRET_ACCESS_KEY", "local")
            .env("AGENTKIT_ENDPOINT", self.agentkit.url())
            .env("AGENTKIT_REGIONS", REGION)
            .env("VOLCENGINE_ACCESS_KEY", &credentials.access_key_id)
            .env("VOLCENGINE_SECRET_KEY", credentials.secret_access_key())
            .env("SNAPWAKE_ADMIN_GROUPS", "admins")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        let exec = Instant::now();
        let mut child = command.spawn().expect("start the function binary");
        let answer = self.runtime.invoke(event).await;
        let answered = Instant::now();
        let _ = child.kill().await;
        let Answer::Response(resp) = answer else {
            panic!("{binary} failed the invocation: {answer:?}");
        };
        let status = resp["statusCode"].as_u64().unwrap_or(0) as u16;
        let next = self.runtime.first_next().expect("a first next");
        let (d, a) = (self.dynamo.first(), self.agentkit.first());
        let since = |t: Option<Instant>| t.map_or(f64::NAN, |t| ms(t - next));
        let took = |f: First| match (f.request, f.answer) {
            (Some(r), Some(a)) => ms(a - r),
            _ => f64::NAN,
        };
        let run = Run {
            init: ms(next - exec),
            to_dynamo: since(d.request),
            dynamo: took(d),
            to_agentkit: since(a.request),
            agentkit: took(a),
            answered: ms(answered - exec),
        };
        (run, status)
    }
}

#[tokio::main]
async fn main() {
    println!("## Cold start: exec → first answered request\n");
    let Some(binaries) = std::env::var_os(BINARIES) else {
        println!("Not measured: set `{BINARIES}` to the release binaries' directory (scripts/bench.sh does).\n");
        return;
    };
    let world = World::start(Duration::ZERO).await;
    let store = dynamo_store("cold-answer").await;
    world.register(&store).await;
    let table = store.table().to_string();
    let dynamo_url = std::env::var("AWS_ENDPOINT_URL").expect("DynamoDB Local");
    let upstream = |url: &str| -> SocketAddr {
        let authority = url.split("://").nth(1).unwrap_or(url).trim_end_matches('/');
        authority
            .replace("localhost", "127.0.0.1")
            .parse()
            .unwrap_or_else(|e| panic!("{url}: {e}"))
    };
    let bench = Bench {
        dynamo: TimingProxy::start(upstream(&dynamo_url)).await,
        agentkit: TimingProxy::start(upstream(&world.sim.endpoint())).await,
        runtime: RuntimeApi::start().await,
        binaries: binaries.into(),
        table,
        world,
    };

    println!(
        "Each release binary started against the fake Lambda Runtime API of `snapwake-tests`, \
         handed one API Gateway event at its first `next`, and timed until it posts the answer \
         ({RUNS} runs, medians; `cargo bench -p snapwake-tests --bench cold_answer`). DynamoDB \
         Local and the simulator are reached through loopback proxies that note the first \
         request and its answer. *to DynamoDB* and *to AgentKit* count from the event handed \
         over; *DynamoDB* and *AgentKit* are the first call's request → answer.\n"
    );
    println!(
        "| function, request | init (exec → `next`) | to DynamoDB | DynamoDB | to AgentKit | AgentKit | exec → answer |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (binary, what) in [
        ("resume", "wake an asleep agent"),
        ("list", "list alice's agents"),
    ] {
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            let event = if binary == "resume" {
                let (agent_id, _) = bench.world.asleep_agent("alice", "Cold");
                event(
                    "POST",
                    &format!("/v1/agents/codex/{agent_id}/resume"),
                    Who::User("alice"),
                    None,
                )
            } else {
                event("GET", "/v1/agents", Who::User("alice"), None)
            };
            let (run, status) = bench.run(binary, &event).await;
            assert_eq!(status, 200, "{binary}: the first answer is a 200");
            runs.push(run);
        }
        let col = |f: fn(&Run) -> f64| format!("{:.1} ms", median(runs.iter().map(f).collect()));
        println!(
            "| {binary}, {what} | {} | {} | {} | {} | {} | {} |",
            col(|r| r.init),
            col(|r| r.to_dynamo),
            col(|r| r.dynamo),
            col(|r| r.to_agentkit),
            col(|r| r.agentkit),
            col(|r| r.answered),
        );
    }
    println!();
}
