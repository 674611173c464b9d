//! The delete function end to end: API Gateway v2 requests into the handler, the agent's lock
//! on DynamoDB Local (one case also in memory), AgentKit simulated over HTTP — and races of
//! deletes against resumes, many rounds each.

use std::sync::Arc;
use std::time::Duration;

use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::registry_cache::{RegistryCache, ToolOverrides};
use snapwake::store::memory::MemoryStore;
use snapwake::store::{AgentStore, Changes, Condition};
use snapwake::timestamp::{now_ms, now_s};
use snapwake::wake::WakeSettings;
use snapwake_delete::Delete;
use snapwake_resume::Resume;
use snapwake_tests::*;

fn delete_fn<S: AgentStore, K: AgentKit>(
    store: S,
    agentkit: K,
    wake: WakeSettings,
) -> Delete<S, K> {
    Delete {
        store,
        agentkit,
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        settings: delete_settings(&wake),
    }
}

fn resume_fn<S: AgentStore, K: AgentKit>(
    store: S,
    agentkit: K,
    wake: WakeSettings,
) -> Resume<S, K> {
    Resume {
        store,
        agentkit,
        registry: RegistryCache::new(ToolOverrides::default()),
        identity: identity(),
        wake,
    }
}

/// Short polls and leases that still cover a delete's work.
fn quick() -> WakeSettings {
    quick_wake()
}

fn agent_path(agent_id: &str) -> String {
    format!("/v1/agents/codex/{agent_id}")
}

fn snapshot_path(agent_id: &str, snapshot_id: &str) -> String {
    format!("/v1/agents/codex/{agent_id}/snapshots/{snapshot_id}")
}

fn resume_path(agent_id: &str) -> String {
    format!("/v1/agents/codex/{agent_id}/resume")
}

fn key(agent_id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, agent_id)
}

/// Hold `agent_id` as a live wake would (no AgentKit involved).
async fn hold_as_waking<S: AgentStore>(store: &S, agent_id: &str) {
    store
        .update(
            &key(agent_id),
            &Condition::Absent,
            &Changes {
                state: Some(WakeState::Waking),
                holder: Some(Some("waker".into())),
                bump_fence: true,
                lease_until_ms: Some(now_ms() + 60_000),
                ..Changes::default()
            },
        )
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Snapshot delete

async fn snapshot_delete_is_idempotent<S: AgentStore + Clone>(store: S) {
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, newest) = world.asleep_agent("alice", "Two snaps");
    let older = world.more_snapshots("alice", &agent_id, 1).remove(0);
    let f = delete_fn(store.clone(), world.client(), quick());

    let resp = f
        .handle(request(
            "DELETE",
            &snapshot_path(&agent_id, &newest),
            Who::User("alice"),
            None,
        ))
        .await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    assert!(
        world.sim.control().snapshot(&newest).is_none(),
        "deleted in AgentKit"
    );
    assert!(
        world.sim.control().snapshot(&older).is_some(),
        "only that one"
    );
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Asleep, "back to rest");
    assert!(record.holder.is_none());
    assert_eq!(record.description.owner.as_deref(), Some("alice"));

    // Again: already gone is success, and nothing else is touched.
    let resp = f
        .handle(request(
            "DELETE",
            &snapshot_path(&agent_id, &newest),
            Who::User("alice"),
            None,
        ))
        .await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    assert!(world.sim.control().snapshot(&older).is_some());
    assert_eq!(
        world
            .sim
            .control()
            .counters()
            .succeeded("DeleteSessionSnapshot"),
        1,
        "the repeat sent no second delete"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_delete_answers_204_then_204_again_on_dynamodb() {
    snapshot_delete_is_idempotent(Arc::new(dynamo_store("snapdel").await)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_delete_answers_204_then_204_again_in_memory() {
    snapshot_delete_is_idempotent(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_delete_honours_if_match() {
    let store = Arc::new(dynamo_store("ifmatch").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, newest) = world.asleep_agent("alice", "Versioned");
    let older = world.more_snapshots("alice", &agent_id, 1).remove(0);
    let f = delete_fn(store.clone(), world.client(), quick());
    let del = |snapshot: &str, etag: &str| {
        with_header(
            request(
                "DELETE",
                &snapshot_path(&agent_id, snapshot),
                Who::User("alice"),
                None,
            ),
            "if-match",
            etag,
        )
    };

    // No record yet: the agent is at version 0, so "3" is stale.
    let (status, body) = answer(&f.handle(del(&newest, "\"3\"")).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (412, Some("PRECONDITION_FAILED"))
    );
    let (status, _) = answer(&f.handle(del(&newest, "garbage")).await);
    assert_eq!(status, 412);
    assert!(
        world.sim.control().snapshot(&newest).is_some(),
        "412 deletes nothing"
    );

    let (status, body) = answer(&f.handle(del(&newest, "\"0\"")).await);
    assert_eq!(status, 204, "{body}");
    let version = store.get(&key(&agent_id)).await.unwrap().unwrap().version;
    assert!(version > 0);

    let (status, _) = answer(&f.handle(del(&older, &format!("\"{}\"", version + 1))).await);
    assert_eq!(status, 412);
    assert!(world.sim.control().snapshot(&older).is_some());
    let (status, body) = answer(&f.handle(del(&older, &format!("\"{version}\""))).await);
    assert_eq!(status, 204, "{body}");
    assert!(world.sim.control().snapshot(&older).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_agents_snapshot_is_not_found_and_kept() {
    let store = Arc::new(dynamo_store("foreign-snap").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (mine, _) = world.asleep_agent("alice", "Mine");
    let (also_mine, its_snapshot) = world.asleep_agent("alice", "Also mine");
    let (_, bobs_snapshot) = world.asleep_agent("bob", "Bob's");
    let f = delete_fn(store.clone(), world.client(), quick());

    for foreign in [&its_snapshot, &bobs_snapshot] {
        let (status, body) = answer(
            &f.handle(request(
                "DELETE",
                &snapshot_path(&mine, foreign),
                Who::User("alice"),
                None,
            ))
            .await,
        );
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("SNAPSHOT_NOT_FOUND")),
            "{body}"
        );
        assert!(world.sim.control().snapshot(foreign).is_some(), "kept");
    }
    // Even an admin cannot delete it through the wrong agent.
    let (status, _) = answer(
        &f.handle(request(
            "DELETE",
            &snapshot_path(&mine, &bobs_snapshot),
            Who::Admin("root"),
            None,
        ))
        .await,
    );
    assert_eq!(status, 404);
    let (status, _) = answer(
        &f.handle(request(
            "DELETE",
            &snapshot_path(&mine, "snap-never-was"),
            Who::User("alice"),
            None,
        ))
        .await,
    );
    assert_eq!(status, 404);
    assert_eq!(world.snapshots_of(&also_mine), vec![its_snapshot]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_delete_during_a_live_wake_is_409_and_keeps_the_snapshot() {
    let store = Arc::new(dynamo_store("snapbusy").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, snapshot) = world.asleep_agent("alice", "Waking");
    hold_as_waking(&store, &agent_id).await;
    let f = delete_fn(store.clone(), world.client(), quick());

    for path in [snapshot_path(&agent_id, &snapshot), agent_path(&agent_id)] {
        let resp = f
            .handle(request("DELETE", &path, Who::User("alice"), None))
            .await;
        let (status, body) = answer(&resp);
        assert_eq!(
            (status, body["code"].as_str()),
            (409, Some("AGENT_BUSY")),
            "{path}"
        );
        let retry_after: u64 = resp.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=5).contains(&retry_after));
    }
    assert!(world.sim.control().snapshot(&snapshot).is_some(), "kept");
    assert_eq!(
        world
            .sim
            .control()
            .counters()
            .received("DeleteSessionSnapshot"),
        0
    );
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.holder.as_deref()),
        (WakeState::Waking, Some("waker"))
    );
}

// ---------------------------------------------------------------------------------------------
// Agent delete

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_delete_ends_the_session_deletes_every_snapshot_and_leaves_a_tombstone() {
    let store = Arc::new(dynamo_store("agentdel").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, _) = world.asleep_agent("alice", "Hoarder");
    // More than one page (100) of snapshots, and a live session.
    world.more_snapshots("alice", &agent_id, 130);
    world.live_session("alice", &agent_id);
    let (bystander, bystander_snapshot) = world.asleep_agent("alice", "Bystander");
    assert_eq!(world.snapshots_of(&agent_id).len(), 131);
    assert_eq!(
        world.sim.control().counters().live_sessions_of(&agent_id),
        1
    );
    let f = delete_fn(store.clone(), world.client(), WakeSettings::default());

    let resp = f
        .handle(request(
            "DELETE",
            &agent_path(&agent_id),
            Who::User("alice"),
            None,
        ))
        .await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    assert!(
        world.snapshots_of(&agent_id).is_empty(),
        "every page deleted"
    );
    assert_eq!(
        world.sim.control().counters().live_sessions_of(&agent_id),
        0
    );
    assert_eq!(world.snapshots_of(&bystander), vec![bystander_snapshot]);
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Gone);
    assert!(record.holder.is_none());
    let expires = record.expires_at.unwrap();
    let thirty_days = 30 * 24 * 3600;
    assert!((now_s() + thirty_days - 60..=now_s() + thirty_days).contains(&expires));

    // Repeating it answers 204 without touching AgentKit.
    let calls_before = world.sim.control().counters();
    let resp = f
        .handle(request(
            "DELETE",
            &agent_path(&agent_id),
            Who::User("alice"),
            None,
        ))
        .await;
    assert_eq!(resp.status().as_u16(), 204);
    assert_eq!(world.sim.control().counters().actions, calls_before.actions);
    // So does deleting one of its snapshots now.
    let resp = f
        .handle(request(
            "DELETE",
            &snapshot_path(&agent_id, "snap-x"),
            Who::User("alice"),
            None,
        ))
        .await;
    assert_eq!(resp.status().as_u16(), 204);

    // A late resume: 410, and no session.
    let r = resume_fn(store.clone(), world.client(), quick());
    let (status, body) = answer(
        &r.handle(request(
            "POST",
            &resume_path(&agent_id),
            Who::User("alice"),
            None,
        ))
        .await,
    );
    assert_eq!((status, body["code"].as_str()), (410, Some("AGENT_GONE")));
    let counters = world.sim.control().counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 0);
    assert_eq!(counters.live_sessions_of(&agent_id), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_whose_holder_died_is_finished_by_the_next_one() {
    let store = Arc::new(dynamo_store("takeover").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, snapshot) = world.asleep_agent("alice", "Orphaned");
    // A deleter acquired, then died: its lease has run out.
    store
        .update(
            &key(&agent_id),
            &Condition::Absent,
            &Changes {
                state: Some(WakeState::Deleting),
                holder: Some(Some("dead".into())),
                bump_fence: true,
                lease_until_ms: Some(now_ms() - 10_000),
                ..Changes::default()
            },
        )
        .await
        .unwrap();
    let f = delete_fn(store.clone(), world.client(), quick());
    let resp = f
        .handle(request(
            "DELETE",
            &agent_path(&agent_id),
            Who::User("alice"),
            None,
        ))
        .await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    assert!(world.sim.control().snapshot(&snapshot).is_none());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!((record.state, record.fence), (WakeState::Gone, 2));
}

// ---------------------------------------------------------------------------------------------
// Authorisation and bad input

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_may_delete_and_what_bad_input_answers() {
    let store = Arc::new(dynamo_store("delauthz").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, snapshot) = world.asleep_agent("alice", "Mine");
    let f = delete_fn(store.clone(), world.client(), quick());
    let call = |method: &str, p: String, who: Who<'static>| {
        let r = request(method, &p, who, None);
        let f = &f;
        async move { answer(&f.handle(r).await) }
    };

    for p in [agent_path(&agent_id), snapshot_path(&agent_id, &snapshot)] {
        let (status, body) = call("DELETE", p.clone(), Who::User("mallory")).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("AGENT_NOT_FOUND")),
            "{p}"
        );
        let (status, body) = call("DELETE", p.clone(), Who::Nobody).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (401, Some("UNAUTHENTICATED")),
            "{p}"
        );
    }
    let unknown = "studio-alice-00000000000000000000000000000000";
    let bad: Vec<(&str, String, u16)> = vec![
        ("DELETE", "/v1/agents/gpt/x".into(), 400),
        ("DELETE", "/v1/agents/Codex/x".into(), 400),
        ("DELETE", agent_path(&"a".repeat(201)), 400),
        ("DELETE", agent_path("a%2Fb"), 400),
        ("DELETE", agent_path("a%00b"), 400),
        ("DELETE", snapshot_path(&agent_id, "..%2Fx"), 400),
        ("DELETE", snapshot_path(&agent_id, &"s".repeat(201)), 400),
        ("DELETE", agent_path(unknown), 404),
        ("DELETE", snapshot_path(unknown, "snap-1"), 404),
        ("DELETE", "/v1/agents/codex/x/snapshots".into(), 404),
        ("GET", agent_path(&agent_id), 405),
        ("POST", snapshot_path(&agent_id, &snapshot), 405),
    ];
    for (method, p, want) in bad {
        let (status, body) = call(method, p.clone(), Who::User("alice")).await;
        assert_eq!(status, want, "{method} {p}: {body}");
        assert!(body["code"].is_string(), "problem+json for {p}");
    }
    let resp = f
        .handle(request(
            "GET",
            &agent_path(&agent_id),
            Who::User("alice"),
            None,
        ))
        .await;
    assert_eq!(resp.headers()["allow"], "DELETE");

    // `snapshot-<id>` agents are admin-only.
    let ctl = world.sim.control();
    let orphan = ctl
        .seed_snapshot(snapwake_sim::SeedSnapshot {
            tool_id: world.recoverable.clone(),
            ..Default::default()
        })
        .unwrap();
    let orphan_agent = format!("snapshot-{orphan}");
    let (status, _) = call(
        "DELETE",
        snapshot_path(&orphan_agent, &orphan),
        Who::User("alice"),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = call(
        "DELETE",
        snapshot_path(&orphan_agent, "snap-other"),
        Who::Admin("root"),
    )
    .await;
    assert_eq!(status, 404, "a snapshot agent has only its own snapshot");
    assert!(ctl.snapshot(&orphan).is_some());
    let (status, body) = call("DELETE", agent_path(&orphan_agent), Who::Admin("root")).await;
    assert_eq!(status, 204, "{body}");
    assert!(ctl.snapshot(&orphan).is_none());

    // Nothing was deleted by any refused request; an admin may delete anyone's snapshot.
    assert!(ctl.snapshot(&snapshot).is_some());
    let (status, body) = call(
        "DELETE",
        snapshot_path(&agent_id, &snapshot),
        Who::Admin("root"),
    )
    .await;
    assert_eq!(status, 204, "{body}");
    assert!(ctl.snapshot(&snapshot).is_none());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(
        record.description.owner, None,
        "the admin is not recorded as the owner"
    );
    let (status, body) = call("DELETE", agent_path(&agent_id), Who::Admin("root")).await;
    assert_eq!(status, 204, "{body}");
}

// ---------------------------------------------------------------------------------------------
// Races, many rounds on DynamoDB Local

const ROUNDS: usize = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resume_racing_agent_delete_never_leaves_a_live_session_after_a_204() {
    let store = Arc::new(dynamo_store("race-agent").await);
    let world = World::start(Duration::from_millis(30)).await;
    world.register(&store).await;
    let jitter = || Jitter {
        inner: world.client(),
        max_ms: 15,
    };
    let resume = Arc::new(resume_fn(store.clone(), jitter(), quick()));
    let delete = Arc::new(delete_fn(store.clone(), jitter(), quick()));
    let mut outcomes = std::collections::BTreeMap::<(u16, u16), usize>::new();

    for round in 0..ROUNDS {
        let (agent_id, _) = world.asleep_agent("alice", &format!("Race {round}"));
        let r = tokio::spawn({
            let resume = resume.clone();
            let p = resume_path(&agent_id);
            async move {
                answer(
                    &resume
                        .handle(request("POST", &p, Who::User("alice"), None))
                        .await,
                )
            }
        });
        let d = tokio::spawn({
            let delete = delete.clone();
            let p = agent_path(&agent_id);
            async move {
                answer(
                    &delete
                        .handle(request("DELETE", &p, Who::User("alice"), None))
                        .await,
                )
            }
        });
        let (resumed, deleted) = (r.await.unwrap(), d.await.unwrap());
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
                    .handle(request(
                        "DELETE",
                        &agent_path(&agent_id),
                        Who::User("alice"),
                        None,
                    ))
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
                .handle(request(
                    "POST",
                    &resume_path(&agent_id),
                    Who::User("alice"),
                    None,
                ))
                .await,
        );
        assert_eq!(late, 410, "round {round}: {body}");
        assert_eq!(
            world.sim.control().counters().live_sessions_of(&agent_id),
            0
        );
    }
    // Every round answered one of the pairs the protocol allows (asserted per round above);
    // the tally says which interleavings this run met.
    assert_eq!(outcomes.values().sum::<usize>(), ROUNDS);
    tracing::info!(?outcomes, "(resume, delete) outcomes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resume_racing_snapshot_delete_never_resumes_a_deleted_snapshot() {
    let store = Arc::new(dynamo_store("race-snap").await);
    let world = World::start(Duration::from_millis(30)).await;
    world.register(&store).await;
    let jitter = || Jitter {
        inner: world.client(),
        max_ms: 15,
    };
    let resume = Arc::new(resume_fn(store.clone(), jitter(), quick()));
    let delete = Arc::new(delete_fn(store.clone(), jitter(), quick()));
    let mut outcomes = std::collections::BTreeMap::<(u16, u16), usize>::new();

    for round in 0..ROUNDS {
        // Resume's default is the newest snapshot: the one being deleted.
        let (agent_id, newest) = world.asleep_agent("alice", &format!("Race {round}"));
        let older = if round % 2 == 0 {
            world.more_snapshots("alice", &agent_id, 1).pop()
        } else {
            None
        };
        let r = tokio::spawn({
            let resume = resume.clone();
            let p = resume_path(&agent_id);
            async move {
                answer(
                    &resume
                        .handle(request("POST", &p, Who::User("alice"), None))
                        .await,
                )
            }
        });
        let d = tokio::spawn({
            let delete = delete.clone();
            let p = snapshot_path(&agent_id, &newest);
            async move {
                answer(
                    &delete
                        .handle(request("DELETE", &p, Who::User("alice"), None))
                        .await,
                )
            }
        });
        let (resumed, deleted) = (r.await.unwrap(), d.await.unwrap());
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

// ---------------------------------------------------------------------------------------------
// The interleaving the races above hit only by chance, forced

/// A resume lists the agent's snapshots only once it holds the lock, so the interleaving that
/// once let a wake resume a snapshot deleted after its listing cannot happen: a snapshot
/// delete arriving while the holder lists answers 409 and deletes nothing; once the wake is
/// done, the delete goes through and the agent stays awake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_delete_while_the_holder_lists_waits_for_the_wake() {
    let store = Arc::new(dynamo_store("stale-list").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, newest) = world.asleep_agent("alice", "Stale");
    let older = world.more_snapshots("alice", &agent_id, 1).remove(0);

    let gate = Arc::new(Gate::after(world.client(), "ListSessionSnapshots"));
    let resume = Arc::new(resume_fn(store.clone(), gate.clone(), quick()));
    let r = tokio::spawn({
        let resume = resume.clone();
        let p = resume_path(&agent_id);
        async move {
            answer(
                &resume
                    .handle(request("POST", &p, Who::User("alice"), None))
                    .await,
            )
        }
    });
    tokio::time::timeout(Duration::from_secs(10), gate.reached.notified())
        .await
        .expect("the holder listed the snapshots");
    let held = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(held.state, WakeState::Waking, "it lists under the lock");

    let delete = delete_fn(store.clone(), world.client(), quick());
    let del = || {
        request(
            "DELETE",
            &snapshot_path(&agent_id, &newest),
            Who::User("alice"),
            None,
        )
    };
    let (status, body) = answer(&delete.handle(del()).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{body}"
    );
    assert!(
        world.sim.control().snapshot(&newest).is_some(),
        "nothing deleted under a wake"
    );
    gate.release.notify_one();

    let (status, body) = r.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let woken = body["session"]["session_id"].as_str().unwrap().to_string();
    let counters = world.sim.control().counters();
    assert_eq!(
        counters.resumes_of(&newest),
        1,
        "woke from the newest snapshot"
    );
    assert_eq!(counters.resumes_of(&older), 0);

    let (status, body) = answer(&delete.handle(del()).await);
    assert_eq!(status, 204, "{body}");
    assert!(world.sim.control().snapshot(&newest).is_none());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        WakeState::Awake,
        "the delete handed the agent back awake"
    );
    assert_eq!(record.session_id.as_deref(), Some(woken.as_str()));
    assert_eq!(
        world.sim.control().counters().live_sessions_of(&agent_id),
        1
    );
}

/// AgentKit failing part-way through an agent delete: the error is answered, the lock is
/// handed back (no 409 for a minute), and a retry finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_agent_delete_releases_the_agent_and_a_retry_finishes() {
    let store = Arc::new(dynamo_store("delfault").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, _) = world.asleep_agent("alice", "Flaky");
    world.more_snapshots("alice", &agent_id, 2);
    let ctl = world.sim.control();
    // Every attempt (the client retries twice) of the first snapshot deletion fails.
    ctl.inject(
        snapwake_sim::Fault::error(Some("DeleteSessionSnapshot"), "InternalError", 500).next(3),
    )
    .unwrap();
    let f = delete_fn(store.clone(), world.client(), quick());
    let (status, body) = answer(
        &f.handle(request(
            "DELETE",
            &agent_path(&agent_id),
            Who::User("alice"),
            None,
        ))
        .await,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (502, Some("PROVIDER_ERROR")),
        "{body}"
    );
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!((record.state, record.holder), (WakeState::Asleep, None));
    assert!(ctl.counters().faults_fired > 0);

    ctl.clear_faults();

    let (status, body) = answer(
        &f.handle(request(
            "DELETE",
            &agent_path(&agent_id),
            Who::User("alice"),
            None,
        ))
        .await,
    );
    assert_eq!(status, 204, "{body}");
    assert!(world.snapshots_of(&agent_id).is_empty());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Gone);
}

/// A delete caught holding the agent (it has deleted the first of the agent's snapshots): a
/// resume meanwhile answers 409 and sends no Resume; once the delete is done, a late resume
/// is 410 and nothing is left in AgentKit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_meeting_an_agent_delete_is_409_then_410() {
    let store = Arc::new(dynamo_store("delete-first").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, _) = world.asleep_agent("alice", "Doomed");
    world.more_snapshots("alice", &agent_id, 2);
    let gate = Arc::new(Gate::after(world.client(), "DeleteSessionSnapshot"));
    let delete = Arc::new(delete_fn(store.clone(), gate.clone(), quick()));
    let d = tokio::spawn({
        let delete = delete.clone();
        let p = agent_path(&agent_id);
        async move {
            answer(
                &delete
                    .handle(request("DELETE", &p, Who::User("alice"), None))
                    .await,
            )
        }
    });
    gate.reached().await;
    assert_eq!(
        store.get(&key(&agent_id)).await.unwrap().unwrap().state,
        WakeState::Deleting
    );

    let resume = resume_fn(store.clone(), world.client(), quick());
    let call = || request("POST", &resume_path(&agent_id), Who::User("alice"), None);
    let resp = resume.handle(call()).await;
    let (status, body) = answer(&resp);
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{body}"
    );
    assert!(resp.headers().contains_key("retry-after"));
    gate.release.notify_one();
    let (status, body) = d.await.unwrap();
    assert_eq!(status, 204, "{body}");

    let (status, body) = answer(&resume.handle(call()).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (410, Some("AGENT_GONE")),
        "{body}"
    );
    let counters = world.sim.control().counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 0);
    assert_eq!(counters.live_sessions_of(&agent_id), 0);
    assert!(world.snapshots_of(&agent_id).is_empty());
}

/// A wake caught holding the agent between a Resume AgentKit carried out and recording its
/// SessionId: an agent delete meanwhile answers 409 and deletes nothing; once the wake is
/// done, the delete ends the session, deletes the snapshots, and a late resume is 410.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_delete_meeting_a_wake_is_409_until_the_wake_is_done() {
    let store = Arc::new(dynamo_store("wake-first").await);
    let world = World::start(Duration::from_millis(200)).await;
    world.register(&store).await;
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Busy");
    let gate = Arc::new(Gate::after(world.client(), "ResumeSessionFromSnapshot"));
    let resume = Arc::new(resume_fn(store.clone(), gate.clone(), quick()));
    let r = tokio::spawn({
        let resume = resume.clone();
        let p = resume_path(&agent_id);
        async move {
            answer(
                &resume
                    .handle(request("POST", &p, Who::User("alice"), None))
                    .await,
            )
        }
    });
    gate.reached().await;

    let delete = delete_fn(store.clone(), world.client(), quick());
    let call = || request("DELETE", &agent_path(&agent_id), Who::User("alice"), None);
    let (status, body) = answer(&delete.handle(call()).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{body}"
    );
    let ctl = world.sim.control();
    assert!(
        ctl.snapshot(&snapshot_id).is_some(),
        "nothing deleted under a wake"
    );
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1);
    gate.release.notify_one();
    let (status, body) = r.await.unwrap();
    assert_eq!(status, 200, "{body}");

    let (status, body) = answer(&delete.handle(call()).await);
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        ctl.counters().live_sessions_of(&agent_id),
        0,
        "the session ended"
    );
    assert!(world.snapshots_of(&agent_id).is_empty());
    let (status, _) = answer(
        &resume
            .handle(request(
                "POST",
                &resume_path(&agent_id),
                Who::User("alice"),
                None,
            ))
            .await,
    );
    assert_eq!(status, 410);
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 1);
}

/// A wake whose holder died after AgentKit carried out its Resume, before the SessionId was
/// recorded: a delete waits out the holder's lease (409), then takes the agent over and ends
/// the session no record names (found by UserSessionId). Nothing survives its 204.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_delete_after_a_dead_wake_ends_the_session_nobody_recorded() {
    let store = Arc::new(dynamo_store("dead-wake").await);
    let world = World::start(Duration::ZERO).await;
    world.register(&store).await;
    let (agent_id, _) = world.asleep_agent("alice", "Orphan");
    let gate = Arc::new(Gate::after(world.client(), "ResumeSessionFromSnapshot"));
    let resume = Arc::new(resume_fn(store.clone(), gate.clone(), quick()));
    let r = tokio::spawn({
        let resume = resume.clone();
        let p = resume_path(&agent_id);
        async move {
            resume
                .handle(request("POST", &p, Who::User("alice"), None))
                .await
        }
    });
    gate.reached().await;
    r.abort();
    let _ = r.await;
    let held = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(held.state, WakeState::Waking);
    assert!(held.session_id.is_none() && held.resume_sent_at_ms.is_some());
    let ctl = world.sim.control();
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 1);

    let delete = delete_fn(store.clone(), world.client(), quick());
    let call = || request("DELETE", &agent_path(&agent_id), Who::User("alice"), None);
    let (status, _) = answer(&delete.handle(call()).await);
    assert_eq!(status, 409, "the dead holder's lease still holds");
    let wait_ms = held.lease_until_ms.saturating_sub(now_ms()) + 400;
    tokio::time::sleep(Duration::from_millis(wait_ms)).await;
    let (status, body) = answer(&delete.handle(call()).await);
    assert_eq!(status, 204, "{body}");
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 0);
    assert!(world.snapshots_of(&agent_id).is_empty());
    assert_eq!(
        store.get(&key(&agent_id)).await.unwrap().unwrap().state,
        WakeState::Gone
    );
}
