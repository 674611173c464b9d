//! Races, many rounds on DynamoDB Local: a resume racing an agent delete never leaves a live
//! session after a 204, and a resume racing a snapshot delete never resumes a deleted snapshot.

use snapwake::store::dynamo::DynamoStore;

use super::*;

// ---------------------------------------------------------------------------------------------
// Races, many rounds on DynamoDB Local

const ROUNDS: usize = 20;

/// AgentKit behind a jitter, so that the racers interleave differently every round.
type Jittery = Hooked<snapwake::agentkit::AgentKitClient, Jitter>;

/// A race's contenders over a fresh table named `table` (sessions Ready after 30 ms): the
/// resume and delete functions, each calling AgentKit behind a jitter of 0..15 ms.
async fn contenders(
    table: &str,
) -> (
    World,
    Arc<snapwake_resume::Resume<Arc<DynamoStore>, Jittery>>,
    Arc<snapwake_delete::Delete<Arc<DynamoStore>, Jittery>>,
) {
    let (store, world, _) = deployed_shared(table, Duration::from_millis(30)).await;
    let jitter = || Jitter::before(world.client(), 15);
    let resume = Arc::new(resume_fn(store.clone(), jitter(), quick()));
    let delete = delete_fn(store.clone(), jitter(), delete_settings(&quick()));
    (world, resume, Arc::new(delete))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resume_racing_agent_delete_never_leaves_a_live_session_after_a_204() {
    let (world, resume, delete) = contenders("race-agent").await;
    let mut outcomes = std::collections::BTreeMap::<(u16, u16), usize>::new();

    for round in 0..ROUNDS {
        let (agent_id, _) = world.asleep_agent("alice", &format!("Race {round}"));
        let r = spawn_request(&resume, alices_request("POST", &resume_path(&agent_id)));
        let d = spawn_request(&delete, alices_request("DELETE", &agent_path(&agent_id)));
        let (resumed, deleted) = (answer(&r.await.unwrap()), answer(&d.await.unwrap()));
        *outcomes.entry((resumed.0, deleted.0)).or_default() += 1;
        assert!(
            [200, 202, 409, 410].contains(&resumed.0),
            "round {round}: resume answered {resumed:?}"
        );
        assert!(
            [204, 409].contains(&deleted.0),
            "round {round}: delete answered {deleted:?}"
        );
        // The invariants of the race itself, before anything else happens:
        // - a 204 of the agent delete leaves no live session behind, whatever the resume said;
        // - a resume never succeeds after that delete (it answers 410, or it woke the agent
        //   before the delete took it, and the delete then ended that very session);
        // - at most one Resume was sent for the agent.
        let ctl = world.sim.control();
        let counters = ctl.counters();
        if deleted.0 == 204 {
            assert_eq!(counters.live_sessions_of(&agent_id), 0, "round {round}");
            if resumed.0 == 200 {
                let sid = resumed.1["session"]["session_id"]
                    .as_str()
                    .unwrap_or_default();
                assert!(
                    ctl.session(sid).is_none_or(|s| !s.is_active()),
                    "round {round}: the woken session outlived the delete"
                );
            }
        }
        if resumed.0 == 409 {
            assert_eq!(resumed.1["code"], "AGENT_BUSY", "round {round}");
        }
        assert!(counters.live_sessions_of(&agent_id) <= 1, "round {round}");

        // Delete until it succeeds (a wake may hold the agent for a moment).
        let mut status = deleted.0;
        for _ in 0..50 {
            if status == 204 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            status = answer(
                &delete
                    .handle(alices_request("DELETE", &agent_path(&agent_id)))
                    .await,
            )
            .0;
        }
        assert_eq!(status, 204, "round {round}");
        let counters = world.sim.control().counters();
        assert_eq!(
            counters.live_sessions_of(&agent_id),
            0,
            "round {round}: a live session survived"
        );
        assert!(world.snapshots_of(&agent_id).is_empty(), "round {round}");

        let (late, body) = answer(
            &resume
                .handle(alices_request("POST", &resume_path(&agent_id)))
                .await,
        );
        assert_eq!(late, 410, "round {round}: {body}");
        assert_eq!(world.live_sessions_of(&agent_id), 0);
    }
    // Every round answered one of the pairs the protocol allows (asserted per round above);
    // the tally says which interleavings this run met.
    assert_eq!(outcomes.values().sum::<usize>(), ROUNDS);
    tracing::info!(?outcomes, "(resume, delete) outcomes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resume_racing_snapshot_delete_never_resumes_a_deleted_snapshot() {
    let (world, resume, delete) = contenders("race-snap").await;
    let mut outcomes = std::collections::BTreeMap::<(u16, u16), usize>::new();

    for round in 0..ROUNDS {
        // Resume's default is the newest snapshot: the one being deleted.
        let (agent_id, newest) = world.asleep_agent("alice", &format!("Race {round}"));
        let older = if round % 2 == 0 {
            world.more_snapshots("alice", &agent_id, 1).pop()
        } else {
            None
        };
        let r = spawn_request(&resume, alices_request("POST", &resume_path(&agent_id)));
        let d = spawn_request(
            &delete,
            alices_request("DELETE", &snapshot_path(&agent_id, &newest)),
        );
        let (resumed, deleted) = (answer(&r.await.unwrap()), answer(&d.await.unwrap()));
        *outcomes.entry((resumed.0, deleted.0)).or_default() += 1;

        let ctl = world.sim.control();
        match deleted.0 {
            204 => assert!(ctl.snapshot(&newest).is_none(), "round {round}"),
            409 => assert!(
                ctl.snapshot(&newest).is_some(),
                "round {round}: a 409 lost its snapshot"
            ),
            other => panic!("round {round}: delete answered {other}: {}", deleted.1),
        }
        let counters = ctl.counters();
        assert_eq!(
            counters.received("ResumeSessionFromSnapshot"),
            counters.succeeded("ResumeSessionFromSnapshot"),
            "round {round}: a wake tried a deleted snapshot"
        );
        match resumed.0 {
            200 | 202 => {
                assert_eq!(counters.live_sessions_of(&agent_id), 1, "round {round}");
            }
            409 => assert_eq!(resumed.1["code"], "AGENT_BUSY"),
            // The agent's only snapshot went before the resume found it.
            404 if older.is_none() => assert_eq!(resumed.1["code"], "AGENT_NOT_FOUND"),
            422 => {
                assert_eq!(resumed.1["code"], "NOT_WAKEABLE");
                assert!(
                    older.is_none(),
                    "round {round}: the older snapshot was wakeable"
                );
            }
            other => panic!("round {round}: resume answered {other}: {}", resumed.1),
        }
        if let Some(older) = &older {
            assert!(
                ctl.snapshot(older).is_some(),
                "round {round}: the other snapshot is kept"
            );
        }
    }
    assert_eq!(outcomes.values().sum::<usize>(), ROUNDS);
    tracing::info!(?outcomes, "(resume, delete) outcomes");
}
