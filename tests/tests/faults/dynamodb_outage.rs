//! DynamoDB Local killed mid-storm and restarted: every caller answers within its budget with
//! 200/202 or a problem+json 503/500, and after the restart a retry converges on one live
//! session per agent with no second Resume.

use super::own_dynamo::*;
use super::*;

const OUTAGE_AGENTS: usize = 5;
const OUTAGE_CALLERS: usize = 50;

/// Short leases, and a wait long enough that a holder slowed down by a busy machine still has
/// a whole AgentKit request timeout (2 s) left when it gets to send its Resume.
fn outage_settings() -> WakeSettings {
    let (lease, ready_timeout) = (Duration::from_secs(2), Duration::from_secs(3));
    WakeSettings {
        watch_min: Duration::from_millis(50),
        watch_max: Duration::from_millis(200),
        poll_lease: Duration::from_millis(500),
        ..wake_settings(lease, ready_timeout, Duration::from_secs(6))
    }
}

#[test]
fn dynamodb_killed_mid_storm_answers_503_in_budget_and_converges_after_restart() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    runtime().block_on(async {
        let started = Instant::now();
        let mut dynamo = OwnDynamo::start().await;
        let table = format!("faults-outage-{}", uuid::Uuid::new_v4().simple());
        let store = DynamoStore::from_conf(&dynamo.sdk_config().await, &table);
        create_table_without_stream(store.client(), &table)
            .await
            .unwrap();
        // Sessions take 2 s to become Ready.
        let world = World::registered(Duration::from_secs(2), &store).await;
        let ctl = world.sim.control();
        let agents = asleep_fleet(&world, OUTAGE_AGENTS, "Outage");
        let snapshots_before = ctl.snapshots().len();
        let settings = outage_settings();
        let budget = settings.wait + Duration::from_secs(3);
        let function = Arc::new(resume_fn(store.clone(), world.client(), settings));
        let live = LiveWatch::start(ctl.clone());

        // The storm, in three waves of ten callers per agent (a few ms apart):
        // - agent 0 first; once its Resume was answered, Resumes are made slow (AgentKit acts
        //   after 1 s): agent 0's session is recorded, and its holder polls it when the store
        //   dies, so completing the wake is what fails;
        // - agents 1 and 2; once both their Resumes are in flight, DynamoDB Local is killed:
        //   their SessionIds are never recorded (only `resume_sent_at` is);
        // - agents 3 and 4, on a dead store.
        let storm_start = Instant::now();
        let per_agent = OUTAGE_CALLERS / OUTAGE_AGENTS;
        let wave = |range: std::ops::Range<usize>| -> Vec<_> {
            range
                .flat_map(|k| (0..per_agent).map(move |j| (k, j)))
                .map(|(k, j)| {
                    let (owner, agent_id, _) = agents[k].clone();
                    let function = function.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(5 * j as u64)).await;
                        let began = Instant::now();
                        let answered = tokio::time::timeout(
                            budget,
                            resume_once(&function, owner, &agent_id, &[500, 503]),
                        )
                        .await;
                        (k, began.elapsed(), answered.ok())
                    })
                })
                .collect()
        };
        // Until the simulator counted `n` Resumes (`answered`: answered them, else received
        // them).
        let resumes = |n: u64, answered: bool| {
            let ctl = ctl.clone();
            async move {
                let until = Instant::now() + Duration::from_secs(15);
                loop {
                    let c = ctl.counters();
                    let seen = if answered {
                        c.succeeded("ResumeSessionFromSnapshot")
                    } else {
                        c.received("ResumeSessionFromSnapshot")
                    };
                    if seen >= n {
                        return;
                    }
                    assert!(
                        Instant::now() < until,
                        "not {n} Resumes within 15 s: {:?}",
                        c.actions
                    );
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        };
        let mut callers = wave(0..1);
        resumes(1, true).await;
        ctl.inject(Fault::latency(Some("ResumeSessionFromSnapshot"), 1000))
            .unwrap();
        callers.extend(wave(1..3));
        resumes(3, false).await;
        dynamo.kill();
        let killed_at = storm_start.elapsed();
        callers.extend(wave(3..OUTAGE_AGENTS));

        let mut answers = Vec::new();
        let mut hung = Vec::new();
        let mut panicked = Vec::new();
        let mut slowest = Duration::ZERO;
        for (i, caller) in callers.into_iter().enumerate() {
            match caller.await {
                Ok((k, took, Some(a))) => {
                    slowest = slowest.max(took);
                    answers.push((k, a));
                }
                Ok((k, took, None)) => hung.push((k, took)),
                Err(e) => panicked.push((i, e.to_string())),
            }
        }
        let by_agent: Vec<BTreeMap<String, usize>> = (0..OUTAGE_AGENTS)
            .map(|k| tally(answers.iter().filter(|(a, _)| *a == k).map(|(_, a)| a)))
            .collect();
        // The sessions the storm's 200s named, per agent.
        let storm_sessions: Vec<(usize, String)> = answers
            .iter()
            .filter(|(_, a)| a.status == 200)
            .map(|(k, a)| (*k, a.session.clone()))
            .collect();
        let mut answers: Vec<Answer> = answers.into_iter().map(|(_, a)| a).collect();
        eprintln!(
            "outage storm: store killed at {killed_at:?}; answers per agent {by_agent:?}; \
             slowest {slowest:?} (budget {budget:?})"
        );
        assert!(panicked.is_empty(), "callers panicked: {panicked:?}");
        assert!(
            hung.is_empty(),
            "callers not answered within {budget:?}: {hung:?}"
        );
        let malformed: Vec<_> = answers
            .iter()
            .filter_map(|a| a.malformed.as_ref())
            .take(5)
            .collect();
        assert!(malformed.is_empty(), "malformed answers: {malformed:#?}");
        for a in answers.iter().filter(|a| a.status == 503) {
            assert_eq!(a.code, "STORE_UNAVAILABLE", "a 503 of the outage");
        }
        assert!(
            answers.iter().any(|a| a.status == 503),
            "the outage was noticed by somebody: {:?}",
            tally(&answers)
        );
        let resumes_sent = ctl.counters().received("ResumeSessionFromSnapshot");
        assert_eq!(
            resumes_sent, 3,
            "agents 0, 1 and 2 sent their Resumes before the store died, nobody after"
        );

        // Restart on the same directory and port; retry every agent until 200.
        ctl.clear_faults();
        let restart = Instant::now();
        dynamo.spawn();
        dynamo.wait_ready().await;
        let restarted_in = restart.elapsed();
        // The store kept what it had committed: agents 1 and 2 are waking with a Resume on
        // record (`resume_sent_at`) and no SessionId (else this test proves less than it says).
        for (_, agent_id, _) in &agents[1..3] {
            let record = store
                .get(&AgentKey::new(Kind::Codex, agent_id))
                .await
                .unwrap()
                .expect("the record survived the restart");
            assert!(
                record.state == WakeState::Waking
                    && record.resume_sent_at_ms.is_some()
                    && record.session_id.is_none(),
                "the store died between Resume and recording its SessionId: {record:?}"
            );
        }
        let converge_start = Instant::now();
        let mut finals = Vec::new();
        for (owner, agent_id, snapshot_id) in &agents {
            let until = Instant::now() + Duration::from_secs(30);
            let mut seen = Vec::new();
            let last = loop {
                let a = tokio::time::timeout(
                    budget,
                    resume_once(&function, owner, agent_id, &[409, 429, 500, 502, 503]),
                )
                .await
                .unwrap_or_else(|_| panic!("{agent_id}: a retry after the restart hung"));
                assert!(a.malformed.is_none(), "{agent_id}: {:?}", a.malformed);
                answers.push(a.clone());
                if a.status == 200 || Instant::now() > until {
                    break a;
                }
                seen.push((a.status, a.code.clone()));
                pause(200, 400).await;
            };
            assert_eq!(
                last.status, 200,
                "{agent_id} converges after the restart; answers on the way {seen:?}"
            );
            finals.push((agent_id.clone(), snapshot_id.clone(), last.session, seen));
        }
        let doubled = live.doubled();
        let counters = ctl.counters();
        eprintln!(
            "outage: DynamoDB Local restarted in {restarted_in:?}, converged in {:?}; \
             Resumes received {} (before the restart {resumes_sent}); retries per agent {:?}; \
             whole test {:?}",
            converge_start.elapsed(),
            counters.received("ResumeSessionFromSnapshot"),
            finals.iter().map(|f| f.3.len()).collect::<Vec<_>>(),
            started.elapsed(),
        );
        assert!(
            doubled.is_empty(),
            "agents with two live sessions: {doubled:?}"
        );
        for (agent_id, snapshot_id, session, _) in &finals {
            assert_eq!(
                counters.live_sessions_of(agent_id),
                1,
                "{agent_id}: one live session"
            );
            assert_eq!(
                counters.resumes_of(snapshot_id),
                1,
                "{agent_id}: one Resume, whatever the store lost"
            );
            let record = store
                .get(&AgentKey::new(Kind::Codex, agent_id))
                .await
                .unwrap()
                .expect("the record survived the restart");
            assert_eq!(record.state, WakeState::Awake, "{agent_id}: {record:?}");
            assert_eq!(record.session_id.as_deref(), Some(session.as_str()));
        }
        assert_eq!(
            counters.received("ResumeSessionFromSnapshot"),
            OUTAGE_AGENTS as u64,
            "one Resume per agent in all"
        );
        for (k, session) in &storm_sessions {
            assert_eq!(
                session, &finals[*k].2,
                "agent {k}: a 200 during the outage named the session it converged on"
            );
        }
        assert_eq!(ctl.snapshots().len(), snapshots_before, "no snapshot lost");
        // Last, the views: a 200 shows the agent awake, a 202 waking (docs/http-api.md).
        let inconsistent: Vec<_> = answers
            .iter()
            .filter_map(|a| a.inconsistent.as_ref())
            .collect();
        assert!(
            inconsistent.is_empty(),
            "answers whose view contradicts their status: {inconsistent:#?}"
        );
        drop(dynamo);
    });
}
