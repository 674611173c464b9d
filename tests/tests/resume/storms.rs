//! Storms: 500 callers of a first wake spread over threads of this process and two child
//! processes (this binary re-run as [`super::storm_child`]), and 3 generations of 200 callers
//! each, across processes and in memory: exactly one ResumeSessionFromSnapshot per wake.

use super::*;

// ---------------------------------------------------------------------------------------------
// Storms: 500 callers of a first wake, and 3 generations of 200 callers each

const STORM_PARENT: usize = 200;
const STORM_CHILDREN: usize = 2;
const STORM_PER_CHILD: usize = 150;
/// Most AgentKit calls one storm may cost, whatever its callers (docs/architecture.md, "Quality
/// bars and where they are checked").
const STORM_AGENTKIT_BUDGET: u64 = 15;
/// A storm over this process (`parent` callers) and `children` child processes (this test
/// binary re-run in child mode, `per_child` callers each), all starting at the same instant
/// against one table and one simulator. Answers every caller's (status, session id).
async fn storm_across_processes(
    function: Arc<Resume<snapwake::store::dynamo::DynamoStore, snapwake::agentkit::AgentKitClient>>,
    world: &World,
    table: &str,
    agent_id: &str,
    parent: usize,
    children: usize,
    per_child: usize,
) -> Vec<(u16, String)> {
    let start_at = now_ms() + 1500;
    let spawned: Vec<_> = (0..children)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args(["storm_child", "--exact", "--nocapture", "--test-threads=1"])
                .env("SNAPWAKE_STORM_CHILD", "1")
                .env("STORM_ENDPOINT", world.sim.endpoint())
                .env("STORM_TABLE", table)
                .env("STORM_AGENT", agent_id)
                .env("STORM_COUNT", per_child.to_string())
                .env("STORM_START_AT_MS", start_at.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_until(start_at).await;
    let mut answers = storm(function, agent_id, parent).await;
    for child in spawned {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        assert!(out.status.success(), "a storm child failed");
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<(u16, String)> = text
            .lines()
            // libtest prints "test storm_child ... " before the first line of output.
            .filter_map(|l| l.find("ANSWER ").map(|i| &l[i + "ANSWER ".len()..]))
            .map(|l| {
                let (status, sid) = l.split_once(' ').unwrap_or((l, ""));
                (status.parse().unwrap(), sid.to_string())
            })
            .collect();
        assert_eq!(lines.len(), per_child, "every child caller answered");
        answers.extend(lines);
    }
    answers
}

/// Every caller answered 200 with one and the same session: that session.
fn one_session_for_everybody(answers: &[(u16, String)]) -> String {
    let refused: Vec<_> = answers.iter().filter(|(s, _)| *s != 200).take(3).collect();
    assert!(refused.is_empty(), "all 200: {refused:?}");
    let first = answers[0].1.clone();
    assert!(!first.is_empty());
    assert!(
        answers.iter().all(|(_, sid)| *sid == first),
        "one session for everybody"
    );
    first
}

/// The AgentKit calls per action since `before` (for a failure message).
fn calls_since(
    ctl: &snapwake_sim::SimControl,
    before: &snapwake_sim::Counters,
) -> Vec<(String, u64)> {
    ctl.counters()
        .actions
        .iter()
        .map(|(a, c)| (a.clone(), c.received - before.received(a)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

fn storm_runtime() -> tokio::runtime::Runtime {
    multi_thread_runtime(4)
}

#[test]
fn storm_of_500_resumes_over_threads_and_processes_sends_one_resume() {
    if std::env::var_os("SNAPWAKE_STORM_CHILD").is_some() {
        return;
    }
    storm_runtime().block_on(async {
        let store = dynamo_store("storm").await;
        let table = store.table().to_string();
        let world = World::registered(Duration::from_millis(1500), &store).await;
        let (agent_id, snapshot_id) = world.asleep_agent("alice", "Storm");
        let ctl = world.sim.control();
        ctl.reset_counters();

        let function = Arc::new(resume_fn(store, world.client(), WakeSettings::default()));
        let answers = storm_across_processes(
            function,
            &world,
            &table,
            &agent_id,
            STORM_PARENT,
            STORM_CHILDREN,
            STORM_PER_CHILD,
        )
        .await;
        assert_eq!(
            answers.len(),
            STORM_PARENT + STORM_CHILDREN * STORM_PER_CHILD
        );
        one_session_for_everybody(&answers);
        let counters = ctl.counters();
        assert_eq!(counters.received("ResumeSessionFromSnapshot"), 1);
        assert_eq!(counters.resumes_of(&snapshot_id), 1);
        assert_eq!(counters.live_sessions_of(&agent_id), 1);
        assert!(ctl.snapshot(&snapshot_id).is_some(), "snapshot kept");
        // Joiners watch the record, not AgentKit: the storm's cost does not grow with it.
        let calls = agentkit_calls(&ctl);
        assert!(
            calls <= STORM_AGENTKIT_BUDGET,
            "{calls} AgentKit calls for one storm: {:?}",
            counters.actions
        );
        // Only the winner located the agent (one listing of its snapshots in all).
        assert_eq!(counters.received("ListSessionSnapshots"), 1);
    });
}

/// An agent is woken many times in its life. Three generations: each storm of 200 callers
/// (this process and two children) wakes it once, every caller answers that generation's one
/// session, then the simulated clock runs 8 hours, the session expires into a new snapshot,
/// and the next generation starts from a record that still names the expired session.
#[test]
fn every_generation_of_storms_gets_its_own_one_session_across_processes() {
    if std::env::var_os("SNAPWAKE_STORM_CHILD").is_some() {
        return;
    }
    storm_runtime().block_on(async {
        let store = dynamo_store("generations").await;
        let table = store.table().to_string();
        let world = World::registered(Duration::from_millis(1500), &store).await;
        let (agent_id, _) = world.asleep_agent("alice", "Phoenix");
        let function = Arc::new(resume_fn(store, world.client(), WakeSettings::default()));
        generations(&world, &agent_id, |agent_id| {
            let function = function.clone();
            let table = table.clone();
            let world = &world;
            async move {
                storm_across_processes(function, world, &table, &agent_id, 100, 2, 50).await
            }
        })
        .await;
    });
}

/// The same three generations on the in-memory store (one process, 200 callers each).
#[test]
fn every_generation_of_storms_gets_its_own_one_session_in_memory() {
    storm_runtime().block_on(async {
        let store = Arc::new(MemoryStore::new());
        let world = World::registered(Duration::from_millis(1500), &store).await;
        let (agent_id, _) = world.asleep_agent("alice", "Phoenix");
        let function = Arc::new(resume_fn(store, world.client(), WakeSettings::default()));
        generations(&world, &agent_id, |agent_id| {
            let function = function.clone();
            async move { storm(function, &agent_id, 200).await }
        })
        .await;
    });
}

/// Three storms of `agent_id`, the simulated clock run past the session's expiry between
/// them; every generation's invariants asserted.
async fn generations<F, Fut>(world: &World, agent_id: &str, mut storm_of: F)
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Vec<(u16, String)>>,
{
    let ctl = world.sim.control();
    let mut seen: Vec<String> = Vec::new();
    for generation in 0..3u64 {
        let calls_before = agentkit_calls(&ctl);
        let counters_before = ctl.counters();
        let answers = storm_of(agent_id.to_string()).await;
        assert_eq!(answers.len(), 200);
        let session = one_session_for_everybody(&answers);
        assert!(
            !seen.contains(&session),
            "generation {generation} answered an earlier generation's session"
        );
        seen.push(session.clone());
        let counters = ctl.counters();
        assert_eq!(
            counters.received("ResumeSessionFromSnapshot"),
            generation + 1,
            "exactly one Resume in generation {generation}"
        );
        assert_eq!(counters.live_sessions_of(agent_id), 1);
        let calls = agentkit_calls(&ctl) - calls_before;
        assert!(
            calls <= STORM_AGENTKIT_BUDGET,
            "generation {generation}: {calls} AgentKit calls: {:?}",
            calls_since(&ctl, &counters_before)
        );
        assert!(ctl
            .session(&session)
            .is_some_and(|s| s.status.as_deref() == Some("Ready")));
        // Eight hours later the session has expired into one more snapshot. (Real time
        // passes too: an awake record is trusted without asking AgentKit for two seconds.)
        ctl.advance(Duration::from_secs(8 * 3600 + 60));
        assert_eq!(ctl.counters().live_sessions_of(agent_id), 0);
        assert_eq!(world.snapshots_of(agent_id).len() as u64, generation + 2);
        tokio::time::sleep(Duration::from_millis(2100)).await;
    }
}
