//! Two smaller defects of deleting and waking: an agent delete reaches every region its
//! kind's Tools live in, and a `snapshot-<id>` agent never adopts another agent's session as
//! the orphan of its own unknown Resume.

use super::*;
use snapwake_sim::{SeedSession, SeedTool};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_delete_reaches_every_region_its_tools_live_in() {
    let store = dynamo_store("delete-regions").await;
    let world = World::start(Duration::ZERO).await;
    let ctl = world.sim.control();
    // The kind's temporary Tool lives in the other region.
    let elsewhere = ctl
        .seed_tool(
            "cn-shanghai",
            SeedTool::code_env("chat-temporary-sh", false),
        )
        .unwrap();
    let mut registry = world.registry();
    registry
        .kinds
        .get_mut(&Kind::Codex)
        .expect("codex is registered")
        .temporary = Some(elsewhere.clone());
    store.put_registry(&registry, 0).await.unwrap();
    // Asleep on the recoverable Tool, and a session of the same agent on the other region's.
    let (agent, _) = world.asleep_agent("alice", "Two regions");
    ctl.seed_session(SeedSession {
        tool_id: elsewhere,
        user_session_id: Some(agent.clone()),
        metadata: vec![MetadataEntry::string("Username", "alice")],
        ..SeedSession::default()
    })
    .unwrap();
    assert_eq!(ctl.counters().live_sessions_of(&agent), 1);

    let api = Api::new(store.clone(), world.client(), identity());
    let del = alices_request("DELETE", &format!("/v1/agents/codex/{agent}"));
    let (status, body) = answer(&api.handle(del).await);
    assert_eq!(status, 204, "{body}");
    assert_eq!(
        ctl.counters().live_sessions_of(&agent),
        0,
        "the other region's session ended"
    );
    assert!(world.snapshots_of(&agent).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_agent_never_adopts_another_agents_session() {
    let (store, world, ctl) = deployed("orphan-claims", Duration::ZERO).await;
    // Two snapshots without a UserSessionId (nor metadata): two `snapshot-<id>` agents.
    let seed = || {
        ctl.seed_snapshot(SeedSnapshot {
            tool_id: world.recoverable.clone(),
            ..SeedSnapshot::default()
        })
        .unwrap()
    };
    let (a, b) = (seed(), seed());
    let api = Api::new(store.clone(), world.client(), identity());
    let wake = |snapshot: &str| {
        request(
            "POST",
            &format!("/v1/agents/codex/snapshot-{snapshot}/resume"),
            Who::Admin("root"),
            None,
        )
    };

    // A's Resume fails in a way that leaves its outcome unknown (it did not act).
    ctl.inject(Fault::error(Some("ResumeSessionFromSnapshot"), "InternalError", 500).next(1))
        .unwrap();
    let (status, body) = answer(&api.handle(wake(&a)).await);
    assert_eq!(status, 202, "{body}");
    // B wakes: its session is the only session without a UserSessionId on the Tool.
    let (status, body) = answer(&api.handle(wake(&b)).await);
    assert_eq!(status, 200, "{body}");
    let bs = body["session"]["session_id"].as_str().unwrap().to_string();

    // A asked again: B's session looks like the orphan A's Resume would have left, but it is
    // B's. A does not adopt it.
    let (status, body) = answer(&api.handle(wake(&a)).await);
    assert_ne!(
        body["session"]["session_id"].as_str(),
        Some(bs.as_str()),
        "{status} {body}"
    );
    let a_record = store
        .get(&codex(&format!("snapshot-{a}")))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(a_record.session_id.as_deref(), Some(bs.as_str()));
    let b_record = store
        .get(&codex(&format!("snapshot-{b}")))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b_record.session_id.as_deref(), Some(bs.as_str()));
}
