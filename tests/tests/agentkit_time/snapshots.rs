//! Snapshots on AgentKit's time: a wake waits for the newest snapshot still being made, passes
//! over one that failed or stays `Creating` too long, and after an expiry waits for the new
//! snapshot (even one not listed yet) or falls back to the newest Ready one.

use super::*;

/// The repro of a lost day: the session just ended, its snapshot is still `Creating`, an older
/// one is Ready. The wake waits (202, `SNAPSHOT_IN_PROGRESS`) instead of waking the older one,
/// then wakes from the new one once it is Ready.
#[tokio::test]
async fn a_wake_waits_for_the_newest_snapshot_and_then_wakes_from_it() {
    let env = Env::start("snapshot-in-progress", settings()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    // The last session: alive until moments ago, its snapshot still being made.
    let last = env.world.live_session("alice", &agent_id);
    ctl.set_snapshot_ready_delay(Duration::from_secs(3));
    let kit = env.world.client();
    let taken = kit
        .call(
            REGION,
            &CreateSessionSnapshot {
                session_id: last.clone(),
                tool_id: env.world.recoverable.clone(),
            },
            Env::deadline(),
        )
        .await
        .unwrap();
    kit.call(
        REGION,
        &DeleteSession {
            tool_id: env.world.recoverable.clone(),
            session_id: last,
        },
        Env::deadline(),
    )
    .await
    .unwrap();
    ctl.reset_counters();

    let (status, body) = env.resume(&agent_id, None).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["state"], "waking", "{body}");
    assert_eq!(body["wake"]["reason"], "SNAPSHOT_IN_PROGRESS", "{body}");
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 0);

    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(15))
        .await;
    assert_eq!(status, 200, "{body}");
    let counters = ctl.counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 1);
    assert_eq!(
        counters.resumes_of(&taken.snapshot_id),
        1,
        "woken from the newest"
    );
    assert_eq!(counters.resumes_of(&older), 0, "never from the older one");
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}

/// A newest snapshot that failed is passed over: the newest Ready one wakes.
#[tokio::test]
async fn a_failed_newest_snapshot_falls_back_to_the_newest_ready_one() {
    let env = Env::start("snapshot-failed", settings()).await;
    let (agent_id, older) = env.world.asleep_agent("alice", "Fallback");
    let ctl = env.world.sim.control();
    ctl.seed_snapshot(SeedSnapshot {
        tool_id: env.world.recoverable.clone(),
        user_session_id: Some(agent_id.clone()),
        session_id: Some("s-failed".into()),
        status: Some("Failed".into()),
        created_at: Some(time::OffsetDateTime::now_utc() + Duration::from_secs(60)),
        ..SeedSnapshot::default()
    })
    .unwrap();
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(10))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ctl.counters().resumes_of(&older), 1);
}

/// A newest snapshot `Creating` for longer than the snapshot timeout fails the wake, naming
/// it (502 `SNAPSHOT_STUCK`); the owner can still wake the older one by name.
#[tokio::test]
async fn a_snapshot_stuck_creating_fails_the_wake_and_an_older_one_wakes_by_name() {
    let env = Env::start("snapshot-stuck", settings()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3 * 3600));
    let ctl = env.world.sim.control();
    let stuck = ctl
        .seed_snapshot(SeedSnapshot {
            tool_id: env.world.recoverable.clone(),
            user_session_id: Some(agent_id.clone()),
            session_id: Some("s-stuck".into()),
            status: Some("Creating".into()),
            created_at: Some(time::OffsetDateTime::now_utc() - Duration::from_secs(7200)),
            ..SeedSnapshot::default()
        })
        .unwrap();
    let (status, body) = env.resume(&agent_id, None).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["code"], "SNAPSHOT_STUCK", "{body}");
    assert!(body["detail"].as_str().unwrap().contains(&stuck), "{body}");
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 0);
    let record = env.record(&agent_id).await;
    assert_eq!(record.state, WakeState::Failed);

    let named = format!(r#"{{"snapshot_id":"{older}"}}"#);
    let (status, body) = env.resume(&agent_id, Some(&named)).await;
    assert!(status == 200 || status == 202, "{status} {body}");
    assert_eq!(ctl.counters().resumes_of(&older), 1);
}

/// The simulator's realistic expiry: the session of an awake agent expires and its snapshot
/// takes a few seconds. The next wake waits for it and wakes from it, not from the older one.
#[tokio::test]
async fn after_an_expiry_the_wake_uses_the_new_snapshot_once_it_is_ready() {
    let env = Env::start("expiry-realistic", roomy()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(10))
        .await;
    assert_eq!(status, 200, "{body}");
    let first = session_of(&body);
    // Eight hours on: the session expires; its snapshot is Creating for 3 s (the default).
    ctl.advance(Duration::from_secs(8 * 3600 + 1));
    tokio::time::sleep(Duration::from_millis(2100)).await; // past the verified-awake second
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(15))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(session_of(&body), first);
    let newest = ctl
        .snapshots()
        .into_iter()
        .find(|s| s.session_id.as_deref() == Some(first.as_str()))
        .and_then(|s| s.snapshot_id)
        .expect("the expired session's snapshot");
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&newest), 1, "woken from the newest");
    assert_eq!(
        counters.resumes_of(&older),
        1,
        "the older one only for the first wake"
    );
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}

/// A snapshot AgentKit does not even list yet: the agent's last session expired moments ago
/// (within `SNAPWAKE_SNAPSHOT_GRACE_S`), so the wake waits for its snapshot to appear instead
/// of waking the older one.
#[tokio::test]
async fn a_snapshot_missing_from_listings_just_after_expiry_is_waited_for() {
    let env = Env::start("expiry-hidden", roomy()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    ctl.set_expiry_snapshot_hidden(Duration::from_secs(2));
    // The agent is awake on a session about to expire (on both clocks: no jump).
    let last = ctl
        .seed_session(snapwake_sim::SeedSession {
            tool_id: env.world.recoverable.clone(),
            user_session_id: Some(agent_id.clone()),
            ttl_secs: Some(2),
            metadata: vec![snapwake::agentkit::types::MetadataEntry::string(
                "Username", "alice",
            )],
            ..Default::default()
        })
        .unwrap();
    let (status, body) = env.resume(&agent_id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(session_of(&body), last);
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(15))
        .await;
    assert_eq!(status, 200, "{body}");
    let newest = ctl
        .snapshots()
        .into_iter()
        .find(|s| s.session_id.as_deref() == Some(last.as_str()))
        .and_then(|s| s.snapshot_id)
        .expect("the expired session's snapshot");
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&newest), 1, "woken from the newest");
    assert_eq!(counters.resumes_of(&older), 0, "never from the older one");
}

/// A newest expiry snapshot that ends `Failed` (the simulator's outcome setting): the wake
/// falls back to the newest Ready one.
#[tokio::test]
async fn an_expiry_snapshot_that_fails_falls_back_to_the_newest_ready_one() {
    let env = Env::start("expiry-failed", roomy()).await;
    let (agent_id, older) = env.asleep_since(Duration::from_secs(3600));
    let ctl = env.world.sim.control();
    let (status, _) = env
        .resume_until_settled(&agent_id, Duration::from_secs(10))
        .await;
    assert_eq!(status, 200);
    ctl.set_expiry_snapshot_outcome("Failed");
    ctl.advance(Duration::from_secs(8 * 3600 + 10));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, body) = env
        .resume_until_settled(&agent_id, Duration::from_secs(15))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ctl.counters().resumes_of(&older), 2);
}
