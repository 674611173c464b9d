//! The answers of a wake in the less common shapes of an agent: a snapshot agent after a wake
//! that expired or failed, a temporary agent, a Resume answered NotFound, and an agent that does
//! not exist.

use super::*;

// ---------------------------------------------------------------------------------------------
// The answers of a wake in the less common shapes of an agent

/// The record of the codex agent `agent_id`, which the test expects to exist.
async fn codex_record(store: &impl AgentStore, agent_id: &str) -> snapwake::domain::AgentRecord {
    store
        .get(&AgentKey::new(Kind::Codex, agent_id))
        .await
        .expect("the store answers")
        .expect("the agent has a record")
}

/// A `snapshot-<id>` agent (a snapshot with no UserSessionId) wakes from its own snapshot
/// every time: after a wake that worked and expired, and after one that failed, its record
/// names its Tool and the next resume finds the snapshot there, never 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_agent_wakes_again_after_a_wake_that_expired_or_failed() {
    let (store, world, ctl) = deployed_shared("snapshot-agent", Duration::ZERO).await;
    let subject = Subject::snapshot_agent(&world);
    let f = resume_fn(store.clone(), world.client(), quick());

    let first = session_id(&subject.converge(&f).await);
    ctl.advance(Duration::from_secs(9 * 3600));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let second = session_id(&subject.converge(&f).await);
    assert_ne!(first, second);
    assert_eq!(ctl.counters().resumes_of(&subject.snapshot_id), 2);

    // A wake that fails for sure (its session is gone at the first poll), then one that works.
    ctl.advance(Duration::from_secs(9 * 3600));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // Two NotFounds: the check of the expired session (it is gone anyway), then the first
    // poll of the new one.
    ctl.inject(Fault::error(Some("GetSession"), "InvalidResource.NotFound", 404).next(2))
        .unwrap();
    let (status, body) = answer(
        &f.handle(request("POST", &path(&subject.agent_id), subject.who, None))
            .await,
    );
    assert_eq!(status, 502, "{body}");
    let record = codex_record(store.as_ref(), &subject.agent_id).await;
    assert_eq!(record.state, WakeState::Failed);
    assert_eq!(
        record.description.tool_id.as_deref(),
        Some(world.recoverable.as_str())
    );
    outcome_forgotten().await;
    subject.converge(&f).await;
    assert_eq!(
        subject.live(&world),
        1,
        "the failed wake's session adopted, not doubled"
    );
    assert_eq!(ctl.counters().resumes_of(&subject.snapshot_id), 3);
}

/// Resume answers an awake temporary agent 200 `resumed: false` (it is awake; there is
/// nothing to wake), and 422 once its session has ended (a temporary agent keeps no snapshot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_agent_is_awake_until_its_session_ends_then_not_wakeable() {
    let (store, world, _) = deployed_shared("temporary", Duration::ZERO).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let created = api
        .create
        .handle(create_request(
            Who::User("alice"),
            r#"{"kind": "codex", "display_name": "Scratch", "retention": "temporary"}"#,
            None,
        ))
        .await;
    let (status, body) = answer(&created);
    assert_eq!(status, 201, "{body}");
    let agent_id = body["agent_id"].as_str().unwrap().to_string();
    let (status, body) = answer(
        &api.resume
            .handle(alices_request("POST", &path(&agent_id)))
            .await,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resumed"], false);
    assert_eq!(body["retention"], "temporary");

    world.sim.control().advance(Duration::from_secs(9 * 3600));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, body) = answer(
        &api.resume
            .handle(alices_request("POST", &path(&agent_id)))
            .await,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("NOT_WAKEABLE")),
        "{body}"
    );
    let record = codex_record(store.as_ref(), &agent_id).await;
    assert!(record.holder.is_none(), "the lock is given back");
    assert_eq!(world.received("ResumeSessionFromSnapshot"), 0);
}

/// A snapshot that vanishes between the listing and the Resume (AgentKit answers NotFound):
/// 422 NOT_WAKEABLE, the agent rests, nothing is recorded as a provider failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_answered_not_found_is_not_wakeable() {
    let (store, world, _) = deployed_shared("resume-404", Duration::ZERO).await;
    let (agent_id, snapshot_id) = world.asleep_agent("alice", "Gone soon");
    let ctl = world.sim.control();
    ctl.inject(
        Fault::error(
            Some("ResumeSessionFromSnapshot"),
            "InvalidResource.NotFound",
            404,
        )
        .next(1),
    )
    .unwrap();
    let f = resume_fn(store.clone(), world.client(), quick());
    let (status, body) = answer(&f.handle(alices_request("POST", &path(&agent_id))).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("NOT_WAKEABLE")),
        "{body}"
    );
    let record = codex_record(store.as_ref(), &agent_id).await;
    assert_eq!((record.state, record.holder), (WakeState::Asleep, None));
    assert!(record.resume_sent_at_ms.is_none());
    assert!(ctl.snapshot(&snapshot_id).is_some());
    assert_eq!(ctl.counters().live_sessions_of(&agent_id), 0);
}

/// A resume of an agent that exists nowhere leaves nothing behind: the record the winner's
/// acquire made is retired, so the id stays a 404 (and absent from the owner's list) however
/// many callers ask at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_an_agent_that_does_not_exist_is_404_for_everybody_and_leaves_no_record() {
    let (store, world, _) = deployed_shared("resume-nothing", Duration::ZERO).await;
    let agent_id = snapwake::identity::caller::mint("alice");
    let f = Arc::new(resume_fn(store.clone(), world.client(), quick()));
    let answers = storm(f.clone(), &agent_id, 20).await;
    assert!(answers.iter().all(|(s, _)| *s == 404), "{answers:?}");
    assert!(store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .is_none());
    assert_eq!(world.received("ResumeSessionFromSnapshot"), 0);
}
