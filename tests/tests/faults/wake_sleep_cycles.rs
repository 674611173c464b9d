//! Day after day under faults (20% bare 503s after acting, 10% 429s): agents woken, put to
//! sleep and woken again, round after round; every sleep takes one Ready snapshot before the
//! session ends, every wake comes from it with one Resume, never two live sessions.

use super::cycle::*;
use super::*;

#[test]
fn agents_woken_and_put_to_sleep_through_503s_and_429s_never_lose_a_workspace() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    runtime().block_on(async {
        let started = Instant::now();
        let (store, world, ctl) = deployed("faults-cycle", Duration::from_millis(300)).await;
        ctl.set_snapshot_ready_delay(Duration::from_millis(300));
        let agents = asleep_fleet(&world, CYCLE_AGENTS, "Cycle");
        ctl.reset_counters();

        // 20% of every AgentKit call answers a bare 503 after acting (a snapshot or a Resume
        // happened all the same, a session was ended all the same), and 10% of all calls 429:
        // 12.5% of the 80% the 503s let by.
        ctl.inject(Fault::bare(None, 503).rate(0.2).after_apply())
            .unwrap();
        ctl.inject(Fault::error(None, "Throttling", 429).rate(0.125))
            .unwrap();

        let kit = Hooked {
            inner: world.client(),
            hook: Watched {
                ctl: ctl.clone(),
                ended: Mutex::new(Vec::new()),
            },
        };
        let function = Arc::new(resume_fn(store.clone(), kit, soak_settings()));
        let live = LiveWatch::start(ctl.clone());
        // Snapshots take 0.3 s to 5 s (changing every second): the slowest outlast a
        // request's wait (4 s), so their sleeps answer 202 and are carried on by whoever
        // comes next.
        let slow_snapshots = tokio::spawn({
            let ctl = ctl.clone();
            async move {
                for ms in [300, 1500, 300, 5000].into_iter().cycle() {
                    ctl.set_snapshot_ready_delay(Duration::from_millis(ms));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        });
        let cycles: Vec<_> = agents
            .iter()
            .enumerate()
            .map(|(i, (owner, agent_id, seeded))| {
                let (function, ctl) = (function.clone(), ctl.clone());
                let (owner, agent_id, seeded) = (*owner, agent_id.clone(), seeded.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(50 * i as u64)).await;
                    cycle(function, ctl, owner, agent_id, seeded).await
                })
            })
            .collect();
        let mut results = Vec::new();
        for c in cycles {
            results.push(c.await.expect("an agent's cycle panicked"));
        }
        let cycled_in = started.elapsed();
        slow_snapshots.abort();
        let counters = ctl.counters();
        ctl.clear_faults();

        // Settled: every agent is awake on the session its last wake answered, unheld, with
        // the seeded snapshot and one Ready snapshot per sleep, no more (but the orphans of
        // sleeps that answered 502 because their snapshot could not be confirmed).
        tokio::time::sleep(Duration::from_millis(2100)).await; // past verify_fresh
        let mut problems: Vec<String> = Vec::new();
        for ((owner, agent_id, seeded), c) in agents.iter().zip(&results) {
            problems.extend(c.problems.iter().map(|p| format!("{agent_id}: {p}")));
            let last = call_once(&function, owner, agent_id, "resume").await;
            if last.status != 200 || last.session != c.session {
                problems.push(format!(
                    "{agent_id}: the final resume answered {} {:?}, the last wake {}",
                    last.status, last.session, c.session
                ));
            }
            let record = store
                .get(&AgentKey::new(Kind::Codex, agent_id))
                .await
                .unwrap()
                .expect("a record of every agent");
            if record.state != WakeState::Awake
                || record.holder.is_some()
                || record.session_id.as_deref() != Some(c.session.as_str())
            {
                problems.push(format!(
                    "{agent_id}: the record says {:?} holder {:?} session {:?} error {:?}",
                    record.state, record.holder, record.session_id, record.error
                ));
            }
            let ready: Vec<String> = snapshots_of(&ctl, agent_id)
                .into_iter()
                .filter(|s| s.is_wakeable())
                .filter_map(|s| s.snapshot_id)
                .collect();
            let mut all: Vec<String> = snapshots_of(&ctl, agent_id)
                .into_iter()
                .filter_map(|s| s.snapshot_id)
                .collect();
            let mut want: Vec<String> = c.taken.clone();
            want.push(seeded.clone());
            let missing: Vec<String> = want
                .iter()
                .filter(|id| !ready.contains(id))
                .cloned()
                .collect();
            want.extend(c.orphans.iter().cloned());
            all.sort();
            want.sort();
            if all != want || !missing.is_empty() {
                problems.push(format!(
                    "{agent_id}: snapshots {all:?} (not Ready: {missing:?}), want the seeded \
                     one, one per sleep and the orphans of unconfirmed sleeps {want:?}"
                ));
            }
        }
        let doubled = live.doubled();
        let ended = function.agentkit.ended.lock().unwrap().clone();
        let unready: Vec<_> = ended
            .iter()
            .filter(|(_, statuses)| !statuses.iter().any(|s| s == "Ready"))
            .take(5)
            .collect();
        let all: Vec<&Answer> = results.iter().flat_map(|c| &c.answers).collect();
        let malformed: Vec<_> = all
            .iter()
            .filter_map(|a| a.malformed.as_ref())
            .take(5)
            .collect();
        let action = |a: &str| (counters.received(a), counters.succeeded(a));
        eprintln!(
            "cycle soak: {} agents x {CYCLE_ROUNDS} sleeps in {cycled_in:?}, {} answers {:?}, \
             {} faults fired; (received, succeeded) CreateSessionSnapshot {:?}, DeleteSession \
             {:?}, GetSessionSnapshot {:?}, Resume {:?}; {} DeleteSessions sent; {} orphan \
             snapshots of unconfirmed sleeps; whole test {:?}",
            CYCLE_AGENTS,
            all.len(),
            tally(all.iter().copied()),
            counters.faults_fired,
            action("CreateSessionSnapshot"),
            action("DeleteSession"),
            action("GetSessionSnapshot"),
            action("ResumeSessionFromSnapshot"),
            ended.len(),
            results.iter().map(|c| c.orphans.len()).sum::<usize>(),
            started.elapsed(),
        );

        assert!(
            unready.is_empty(),
            "sessions ended while no snapshot of theirs was Ready (session, statuses): \
             {unready:?}"
        );
        assert!(
            doubled.is_empty(),
            "agents with two live sessions: {doubled:?}"
        );
        assert!(
            problems.is_empty(),
            "{} problems, e.g. {:#?}",
            problems.len(),
            &problems[..problems.len().min(6)]
        );
        assert!(malformed.is_empty(), "malformed answers: {malformed:#?}");
        let (sent, answered) = action("CreateSessionSnapshot");
        assert!(
            sent > answered && action("DeleteSession").0 > action("DeleteSession").1,
            "no CreateSessionSnapshot or no DeleteSession met a fault: the soak tested nothing \
             of a sleep's ambiguity"
        );
        // Last, the views: a 200 shows the agent awake (asleep, for a sleep).
        let inconsistent: Vec<_> = all.iter().filter_map(|a| a.inconsistent.as_ref()).collect();
        assert!(
            inconsistent.is_empty(),
            "{} answers whose view contradicts their status, e.g. {:#?}",
            inconsistent.len(),
            &inconsistent[..inconsistent.len().min(4)]
        );
    });
}
