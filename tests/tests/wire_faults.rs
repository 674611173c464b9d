//! The wire to DynamoDB broken, not the store trait (docs/testing.md, "Wire faults"): every
//! function's own SDK client talks to DynamoDB Local through a fault proxy
//! (`snapwake_tests::wire`) that fails requests before they reach the store, throttles them,
//! delays them, or lets them land and loses the answer, by operation and key. The SDK's own
//! retries run as in production.
//!
//! Targeted runs put each kind of fault under each write of a wake, a sleep, a create and a
//! delete in turn; a randomized run (seed printed, `SNAPWAKE_WIRE_SEED` replays it) breaks a
//! share of every request while agents are created, woken, put to sleep and deleted at once.
//! Each asserts, once the store is healthy again: no duplicate session, no lost agent, no
//! resurrected agent, every agent converged, and every caller answered within its budget.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use snapwake_sim::SimControl;
use snapwake_tests::wire::{Break, WireFault, WireProxy};
use snapwake_tests::*;

type Store = snapwake::store::dynamo::DynamoStore;
type Functions = Api<Store, snapwake::agentkit::AgentKitClient>;

/// The longest any answer may take: the functions' own budgets (a wake waits 4 s here, a
/// create or delete up to 25 s on paper but seconds in practice) plus a margin for the slowest
/// store call the SDK may still be making when the budget ends.
const ANSWER_BUDGET: Duration = Duration::from_secs(14);

struct Env {
    world: World,
    proxy: WireProxy,
    api: Functions,
    seed: u64,
    slowest: std::sync::Mutex<Duration>,
}

impl Env {
    async fn start(test: &str, seed: u64) -> Env {
        let direct = dynamo_store(test).await;
        let world = World::registered(Duration::from_millis(300), &direct).await;
        let proxy = WireProxy::in_front_of_local(seed).await;
        let store = proxy.store(direct.table()).await;
        let api = Api::new(store, world.client(), identity());
        Env {
            world,
            proxy,
            api,
            seed,
            slowest: std::sync::Mutex::new(Duration::ZERO),
        }
    }

    fn ctl(&self) -> SimControl {
        self.world.sim.control()
    }

    /// One call, timed against [`ANSWER_BUDGET`].
    async fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let what = format!("{method} {path}");
        self.timed(&what, request(method, path, Who::User("alice"), body))
            .await
    }

    async fn create(&self, name: &str, key: &str) -> (u16, Value) {
        let body =
            format!(r#"{{"kind":"codex","display_name":"{name}","retention":"recoverable"}}"#);
        self.timed(
            "create",
            create_request(Who::User("alice"), &body, Some(key)),
        )
        .await
    }

    /// Send `req` through the functions; its answer must come within [`ANSWER_BUDGET`].
    async fn timed(&self, what: &str, req: lambda_http::Request) -> (u16, Value) {
        let started = Instant::now();
        let resp = self.api.handle(req).await;
        let took = started.elapsed();
        let mut slowest = self.slowest.lock().unwrap();
        *slowest = (*slowest).max(took);
        assert!(
            took <= ANSWER_BUDGET,
            "seed {}: {what} answered after {took:?}",
            self.seed
        );
        answer(&resp)
    }

    /// Call until the answer is final (not 202, 409, 429, 503 or a retryable 502), at most
    /// `tries` times; the last answer.
    async fn until_final(&self, method: &str, path: &str, tries: u32) -> (u16, Value) {
        let mut last = (0, Value::Null);
        for _ in 0..tries {
            last = self.call(method, path, None).await;
            let retry = matches!(last.0, 202 | 409 | 429 | 503)
                || (last.0 == 502 && last.1["retryable"] == true);
            if !retry {
                return last;
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        last
    }
}

fn resume(agent: &str) -> String {
    format!("/v1/agents/codex/{agent}/resume")
}

fn sleep_path(agent: &str) -> String {
    format!("/v1/agents/codex/{agent}/sleep")
}

fn agent_path(agent: &str) -> String {
    format!("/v1/agents/codex/{agent}")
}

/// The seed of a randomized run: `SNAPWAKE_WIRE_SEED`, else a fresh one (printed).
fn seed() -> u64 {
    std::env::var("SNAPWAKE_WIRE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..))
}

/// What each agent should end as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Awake,
    Asleep,
    Deleted,
}

/// The store healthy again: every agent converges on its fate, and the invariants hold.
async fn converge_and_check(env: &Env, fates: &BTreeMap<String, Fate>) {
    env.proxy.clear();
    let ctl = env.ctl();
    let seed = env.seed;
    for (agent, fate) in fates {
        match fate {
            Fate::Deleted => {
                let (status, body) = env.until_final("DELETE", &agent_path(agent), 20).await;
                assert_eq!(status, 204, "seed {seed}: {agent} delete converges: {body}");
                let (status, body) = env.call("POST", &resume(agent), None).await;
                assert_eq!(status, 410, "seed {seed}: {agent} stays deleted: {body}");
                assert_eq!(
                    ctl.counters().live_sessions_of(agent),
                    0,
                    "seed {seed}: {agent} resurrected"
                );
                assert!(
                    env.world.snapshots_of(agent).is_empty(),
                    "seed {seed}: {agent} deleted but a snapshot is left"
                );
            }
            Fate::Awake | Fate::Asleep => {
                let (status, body) = env.until_final("POST", &resume(agent), 40).await;
                assert_eq!(status, 200, "seed {seed}: {agent} wake converges: {body}");
                if *fate == Fate::Asleep {
                    let (status, body) = env.until_final("POST", &sleep_path(agent), 40).await;
                    assert_eq!(status, 200, "seed {seed}: {agent} sleep converges: {body}");
                    assert_eq!(
                        ctl.counters().live_sessions_of(agent),
                        0,
                        "seed {seed}: {agent} asleep with a session"
                    );
                    assert!(
                        !env.world.snapshots_of(agent).is_empty(),
                        "seed {seed}: {agent} lost its snapshots"
                    );
                } else {
                    assert_eq!(
                        ctl.counters().live_sessions_of(agent),
                        1,
                        "seed {seed}: {agent} has not exactly one session"
                    );
                }
            }
        }
    }
}

/// At no point more than one live session per agent.
fn no_duplicate(env: &Env, agents: &[String]) {
    let counters = env.ctl().counters();
    for a in agents {
        assert!(
            counters.live_sessions_of(a) <= 1,
            "seed {}: {a} has {} live sessions",
            env.seed,
            counters.live_sessions_of(a)
        );
    }
}

/// Days of an agent's life under faults: woken, put to sleep, again and again, and for some
/// deleted at the end (a delete not confirmed under the faults is finished once the store is
/// healthy).
async fn life(env: Arc<Env>, agent: String, delete: bool) -> Fate {
    for _ in 0..LIFE_DAYS {
        let _ = env.until_final("POST", &resume(&agent), 8).await;
        no_duplicate(&env, std::slice::from_ref(&agent));
        let _ = env.until_final("POST", &sleep_path(&agent), 8).await;
        no_duplicate(&env, std::slice::from_ref(&agent));
    }
    let _ = env.until_final("POST", &resume(&agent), 8).await;
    no_duplicate(&env, std::slice::from_ref(&agent));
    if delete {
        let _ = env.until_final("DELETE", &agent_path(&agent), 8).await;
        return Fate::Deleted;
    }
    Fate::Awake
}

/// Wake-and-sleep days each agent of the randomized run lives under the faults.
const LIFE_DAYS: usize = 4;

/// The randomized run: a share of every request to the table is broken, of every kind, while
/// twelve agents (two of them created under the faults) live their days at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn agents_live_through_a_broken_wire_and_converge() {
    let seed = seed();
    eprintln!("wire faults: seed {seed} (SNAPWAKE_WIRE_SEED={seed} replays it)");
    let env = Arc::new(Env::start("wire-random", seed).await);
    for (fault, rate) in [
        (Break::FailBefore, 0.14),
        (Break::Throttle, 0.11),
        (Break::LandAndLose, 0.14),
        (Break::Delay(400), 0.06),
    ] {
        env.proxy.add(WireFault::new(None, None, fault).rate(rate));
    }

    let mut agents: Vec<String> = (0..10)
        .map(|i| env.world.asleep_agent("alice", &format!("Wire {i}")).0)
        .collect();
    for i in 0..2 {
        let key = format!("wire-{seed}-{i}");
        let mut created = None;
        for _ in 0..20 {
            let (status, body) = env.create(&format!("Made {i}"), &key).await;
            if status == 201 {
                created = body["agent_id"].as_str().map(str::to_string);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if let Some(a) = created {
            agents.push(a);
        }
    }
    let lives: Vec<_> = agents
        .iter()
        .enumerate()
        .map(|(i, a)| tokio::spawn(life(env.clone(), a.clone(), i % 3 == 2)))
        .collect();
    let mut fates = BTreeMap::new();
    for (a, l) in agents.iter().zip(lives) {
        fates.insert(a.clone(), l.await.expect("a life"));
    }
    let fired = env.proxy.fired();
    let total = env.proxy.fired_total();
    no_duplicate(&env, &agents);
    converge_and_check(&env, &fates).await;
    no_duplicate(&env, &agents);
    eprintln!(
        "wire faults: seed {seed}: {total} faults fired {fired:?}, {} requests reached the store, \
         {} agents converged, slowest answer {:?}",
        env.proxy.forwarded(),
        fates.len(),
        env.slowest.lock().unwrap()
    );
    // About 320 here; with the targeted runs (about 175) and the creates (about 40), over 500
    // faults per suite run.
    assert!(total >= 250, "seed {seed}: only {total} faults fired");
}

/// Each kind of fault under each of the first ten writes of an agent's record, in turn, through a
/// wake, a sleep and a delete; then the agent converges, with no second session and nothing
/// lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_write_of_wake_sleep_and_delete_survives_each_fault() {
    let seed = seed();
    let env = Env::start("wire-targeted", seed).await;
    let kinds = [
        Break::FailBefore,
        Break::Throttle,
        Break::LandAndLose,
        Break::Delay(300),
    ];
    let mut runs = 0;
    for kind in kinds {
        for nth in 0..10u32 {
            let (agent, _) = env.world.asleep_agent("alice", "Targeted");
            // Let `nth` writes of the agent's record through, then break the next three (the
            // SDK's attempts at one write).
            let skip = WireFault::new(Some("UpdateItem"), Some("AGENT#"), Break::Pass).next(nth);
            env.proxy.add(skip);
            env.proxy
                .add(WireFault::new(Some("UpdateItem"), Some("AGENT#"), kind).next(3));
            let _ = env.until_final("POST", &resume(&agent), 6).await;
            let _ = env.until_final("POST", &sleep_path(&agent), 6).await;
            let _ = env.until_final("POST", &resume(&agent), 6).await;
            no_duplicate(&env, std::slice::from_ref(&agent));
            let fate = if nth % 2 == 0 {
                Fate::Awake
            } else {
                Fate::Deleted
            };
            if fate == Fate::Deleted {
                env.proxy
                    .add(WireFault::new(Some("UpdateItem"), Some("AGENT#"), kind).next(3));
                let _ = env.until_final("DELETE", &agent_path(&agent), 6).await;
            }
            converge_and_check(&env, &BTreeMap::from([(agent.clone(), fate)])).await;
            runs += 1;
        }
    }
    let total = env.proxy.fired_total();
    eprintln!(
        "wire faults (targeted): {runs} runs, {total} faults fired {:?} (seed {seed})",
        env.proxy.fired()
    );
    // Every run armed three breaks of the wake's path (and three more of a delete).
    assert!(
        total >= 3 * runs,
        "seed {seed}: only {total} faults fired in {runs} runs"
    );
}

/// Create under each kind of fault on its idempotency document and its agent record: one
/// agent, one session, and the retry with the same key answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_create_survives_each_fault_on_its_writes() {
    let seed = seed();
    let env = Env::start("wire-create", seed).await;
    let mut agents = Vec::new();
    for kind in [Break::FailBefore, Break::Throttle, Break::LandAndLose] {
        for prefix in ["IDEM#", "AGENT#"] {
            for op in ["PutItem", "UpdateItem"] {
                env.proxy
                    .add(WireFault::new(Some(op), Some(prefix), kind).next(3));
            }
            let key = format!("create-{}-{kind:?}-{seed}", prefix.trim_end_matches('#'));
            let mut made = None;
            for _ in 0..30 {
                let (status, body) = env.create("Under faults", &key).await;
                if status == 201 {
                    made = body["agent_id"].as_str().map(str::to_string);
                    break;
                }
                assert!(
                    matches!(status, 202 | 409 | 503 | 502),
                    "seed {seed}: create under {kind:?} on {prefix} answered {status}: {body}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            env.proxy.clear();
            let agent = made.unwrap_or_else(|| {
                panic!("seed {seed}: create under {kind:?} on {prefix} never answered 201")
            });
            let (status, again) = env.create("Under faults", &key).await;
            assert_eq!(status, 201, "seed {seed}: the retry replays: {again}");
            assert_eq!(again["agent_id"], agent.as_str());
            assert_eq!(
                env.ctl().counters().live_sessions_of(&agent),
                1,
                "seed {seed}: one session for {agent}"
            );
            agents.push(agent);
        }
    }
    assert_eq!(
        env.ctl().counters().succeeded("CreateSession"),
        agents.len() as u64,
        "seed {seed}: one CreateSession per agent"
    );
    eprintln!(
        "wire faults (create): {} agents, {} faults fired {:?} (seed {seed})",
        agents.len(),
        env.proxy.fired_total(),
        env.proxy.fired()
    );
}

/// The retention sweep under a broken wire: runs that fail or are cut short are run again, and
/// once the store is healthy a pass completes. Every agent keeps exactly its newest snapshots
/// (the way back is never deleted), and nothing else is touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_retention_sweep_keeps_the_way_back_under_a_broken_wire() {
    let seed = seed();
    let env = Env::start("wire-sweep", seed).await;
    let ctl = env.ctl();
    let keep = snapwake_delete::SweepSettings::default().policy.keep;
    let base = time::OffsetDateTime::now_utc() - Duration::from_secs(10 * 24 * 3600);
    let mut fleet: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in 0..6u64 {
        let agent = snapwake::identity::caller::mint("alice");
        // Oldest first; every snapshot at its own minute.
        let ids = (0..keep as u64 + 3)
            .map(|i| {
                ctl.seed_snapshot(snapwake_sim::SeedSnapshot {
                    tool_id: env.world.recoverable.clone(),
                    user_session_id: Some(agent.clone()),
                    session_id: Some(format!("s-{a}-{i}")),
                    created_at: Some(base + Duration::from_secs(60 * (a * 100 + i))),
                    session_metadata: vec![snapwake::agentkit::types::MetadataEntry::string(
                        "Username", "alice",
                    )],
                    ..snapwake_sim::SeedSnapshot::default()
                })
                .unwrap()
            })
            .collect();
        fleet.insert(agent, ids);
    }
    for (fault, rate) in [
        (Break::FailBefore, 0.12),
        (Break::Throttle, 0.10),
        (Break::LandAndLose, 0.12),
    ] {
        env.proxy.add(WireFault::new(None, None, fault).rate(rate));
    }
    let sweep = |budget: Duration| {
        env.api.delete.sweep(
            snapwake::invocation::Deadline::after(budget),
            false,
            &snapwake_delete::Quiet,
        )
    };
    // At least six runs, and on until ten faults have fired (a run a fault cuts short sends
    // few requests: some seeds needed more than six runs to break ten of them).
    for run in 0..40 {
        if run >= 6 && env.proxy.fired_total() >= 10 {
            break;
        }
        let _ = sweep(Duration::from_secs(5)).await;
        for (agent, ids) in &fleet {
            let left = env.world.snapshots_of(agent);
            let newest = &ids[ids.len() - keep..];
            assert!(
                newest.iter().all(|id| left.contains(id)),
                "seed {seed}: {agent} lost one of its newest snapshots under faults: {left:?}"
            );
        }
    }
    let faults = env.proxy.fired_total();
    env.proxy.clear();
    let mut completed = false;
    for _ in 0..5 {
        if let Ok(report) = sweep(Duration::from_secs(20)).await {
            if report.completed {
                completed = true;
                break;
            }
        }
    }
    assert!(completed, "seed {seed}: no healthy sweep completed");
    for (agent, ids) in &fleet {
        let mut left = env.world.snapshots_of(agent);
        left.sort();
        let mut want = ids[ids.len() - keep..].to_vec();
        want.sort();
        assert_eq!(
            left, want,
            "seed {seed}: {agent} keeps exactly its newest {keep}"
        );
    }
    eprintln!("wire faults (sweep): {faults} faults fired under the sweep (seed {seed})");
    assert!(faults >= 10, "seed {seed}: only {faults} faults fired");
}
