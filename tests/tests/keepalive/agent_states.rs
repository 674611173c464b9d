//! Which agents a keepalive reaches: one without a live session is not awake, temporary agents
//! and agents without a record are kept alive too, a deleted agent is gone, and an agent held
//! by a sleep, a wake, a delete or a create is busy.

use super::*;

#[tokio::test]
async fn an_agent_without_a_live_session_is_not_awake() {
    let (world, store, api, ctl) = setup("keepalive-asleep").await;

    // Asleep, known only to AgentKit (no record).
    let (never_woken, _) = world.asleep_agent("alice", "Asleep");
    let resp = post(&api, &never_woken, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");

    // Woken, then put to sleep: the record says asleep.
    let (agent_id, _) = awake_agent(&world, &api).await;
    let (status, body) = answer(&post(&api, &agent_id, "sleep", None).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "asleep", "{body}");
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, WakeState::Asleep);
    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");

    // Awake once, its session ended by expiry (the record still says awake).
    let (expired, session_id) = awake_agent(&world, &api).await;
    ctl.advance(9 * HOUR);
    assert!(ctl.session(&session_id).is_none());
    let resp = post(&api, &expired, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");

    assert_eq!(sent_ttls(&ctl), 0);
    // Nothing was woken by the refusals.
    for agent in [&never_woken, &agent_id, &expired] {
        assert!(ctl
            .sessions()
            .iter()
            .all(|s| s.user_session_id.as_deref() != Some(agent.as_str())));
    }
}

#[tokio::test]
async fn temporary_agents_and_agents_without_a_record_are_kept_alive_too() {
    let (world, store, api, ctl) = setup("keepalive-temporary").await;

    // Created temporary through the API (a record, a session on the temporary Tool).
    let resp = create_scratch(&api).await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["retention"], "temporary", "{body}");
    let temporary = body["agent_id"].as_str().unwrap().to_string();
    let session = body["session"]["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        ctl.session(&session).unwrap().session_id.as_deref(),
        Some(session.as_str())
    );
    let new = kept_alive(&api, &ctl, &temporary, &session, 5400).await;
    assert_eq!(
        recorded_expiry(&store, &temporary).await.map(|s| ts(&s)),
        Some(new)
    );
    // (A sleep is refused it: there is no snapshot to sleep into.)
    let resp = post(&api, &temporary, "sleep", None).await;
    assert_problem(&resp, 422, "NOT_SLEEPABLE");
    assert!(ctl.session(&session).is_some());

    // A temporary session known only to AgentKit (no record): located, kept alive.
    let seeded = caller::mint("alice");
    let seeded_session = ctl
        .seed_session(SeedSession {
            tool_id: world.temporary.clone(),
            user_session_id: Some(seeded.clone()),
            metadata: vec![MetadataEntry::string("Username", "alice")],
            ..Default::default()
        })
        .unwrap();
    kept_alive(&api, &ctl, &seeded, &seeded_session, 600).await;

    // And a recoverable one the same way.
    let recoverable = caller::mint("alice");
    let recoverable_session = world.live_session("alice", &recoverable);
    kept_alive(&api, &ctl, &recoverable, &recoverable_session, 600).await;
    assert_eq!(sent_ttls(&ctl), 3);

    // Not someone else's.
    let resp = call(
        &api,
        "POST",
        &format!("/v1/agents/codex/{seeded}/keepalive"),
        Who::User("bob"),
        Some(r#"{"ttl_s":600}"#),
    )
    .await;
    assert_problem(&resp, 404, "AGENT_NOT_FOUND");
    assert_eq!(sent_ttls(&ctl), 3);
}

#[tokio::test]
async fn a_deleted_agent_is_gone() {
    let (world, _store, api, ctl) = setup("keepalive-deleted").await;
    let (agent_id, _) = awake_agent(&world, &api).await;
    let resp = on_agent(&api, "DELETE", &agent_id).await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 410, "AGENT_GONE");
    assert_eq!(sent_ttls(&ctl), 0);
}

#[tokio::test]
async fn an_agent_held_by_a_sleep_is_busy() {
    let (world, store, api, ctl) = setup("keepalive-sleeping").await;
    let (agent_id, session_id) = awake_agent(&world, &api).await;
    let expiry = sim_expiry(&ctl, &session_id);

    // A snapshot that takes ten (simulated) minutes: the sleep's budget ends first.
    ctl.set_snapshot_ready_delay(Duration::from_secs(600));
    let resp = post(&api, &agent_id, "sleep", None).await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 202, "{body}");
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, WakeState::Sleeping);

    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":3600}"#)).await;
    assert_problem(&resp, 409, "AGENT_BUSY");
    let retry_after: u64 = header_of(&resp, "retry-after")
        .expect("a 409 says when to ask again")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "Retry-After {retry_after}");
    assert_eq!(sent_ttls(&ctl), 0, "nothing was sent to AgentKit");
    assert_eq!(sim_expiry(&ctl, &session_id), expiry);
    assert_eq!(
        store
            .get(&AgentKey::new(Kind::Codex, &agent_id))
            .await
            .unwrap()
            .unwrap()
            .version,
        record.version,
        "a refused keepalive writes nothing"
    );

    // Once the snapshot is Ready the sleep ends the session: nothing to keep alive. (Asked
    // again until it says so, as a client honouring `Retry-After` would, only faster: the
    // poll lease spaces the questions to AgentKit.)
    ctl.advance(Duration::from_secs(601));
    let (mut status, mut body) = (202, Value::Null);
    for _ in 0..20 {
        (status, body) = answer(&post(&api, &agent_id, "sleep", None).await);
        if status != 202 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "asleep", "{body}");
    assert!(ctl.session(&session_id).is_none());
    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":3600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");
    assert_eq!(sent_ttls(&ctl), 0);
}

/// A wake, a delete or a create in flight holds the agent: a keepalive meeting one is a 409
/// (with `Retry-After`) and sends nothing, even though AgentKit already shows a live session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_held_by_a_wake_a_delete_or_a_create_is_busy() {
    let (world, store, api, ctl) = setup("keepalive-held").await;
    let gated = |action: &'static str| {
        let gate = Arc::new(Gate::after(world.client(), action));
        let api = Arc::new(Api::new(store.clone(), gate.clone(), identity()));
        (gate, api)
    };
    let busy = |resp: &lambda_http::Response<lambda_http::Body>, what: &str| {
        assert_problem(resp, 409, "AGENT_BUSY");
        assert!(
            header_of(resp, "retry-after").is_some_and(|v| v.parse::<u64>().is_ok()),
            "{what}: a 409 says when to ask again"
        );
    };
    let state_of = |agent_id: String| {
        let store = store.clone();
        async move {
            store
                .get(&AgentKey::new(Kind::Codex, &agent_id))
                .await
                .unwrap()
                .unwrap()
                .state
        }
    };

    // A wake caught after AgentKit resumed the agent (its new session is live).
    let (waking, _) = world.asleep_agent("alice", "Waking");
    let (gate, holder) = gated("ResumeSessionFromSnapshot");
    let wake = tokio::spawn({
        let path = format!("/v1/agents/codex/{waking}/resume");
        async move { answer(&holder.handle(request("POST", &path, ALICE, None)).await) }
    });
    gate.reached().await;
    assert_eq!(state_of(waking.clone()).await, WakeState::Waking);
    busy(
        &post(&api, &waking, "keepalive", Some(r#"{"ttl_s":600}"#)).await,
        "waking",
    );
    gate.release.notify_one();
    let (status, body) = wake.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let session = body["session"]["session_id"].as_str().unwrap().to_string();
    assert_eq!(sent_ttls(&ctl), 0);
    kept_alive(&api, &ctl, &waking, &session, 600).await;

    // A delete caught after it listed the agent's sessions (before it ended them).
    let (deleting, session) = awake_agent(&world, &api).await;
    let sent = sent_ttls(&ctl);
    let (gate, holder) = gated("ListSessions");
    let delete = tokio::spawn({
        let path = format!("/v1/agents/codex/{deleting}");
        async move { holder.handle(request("DELETE", &path, ALICE, None)).await }
    });
    gate.reached().await;
    assert_eq!(state_of(deleting.clone()).await, WakeState::Deleting);
    assert!(ctl.session(&session).is_some(), "the session is still live");
    busy(
        &post(&api, &deleting, "keepalive", Some(r#"{"ttl_s":600}"#)).await,
        "deleting",
    );
    gate.release.notify_one();
    assert_eq!(delete.await.unwrap().status().as_u16(), 204);
    assert_eq!(sent_ttls(&ctl), sent);
    let resp = post(&api, &deleting, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 410, "AGENT_GONE");

    // A create caught after AgentKit created the session.
    let (gate, holder) = gated("CreateSession");
    let create = tokio::spawn(async move {
        answer(
            &holder
                .handle(request(
                    "POST",
                    "/v1/agents",
                    ALICE,
                    Some(r#"{"kind":"codex","display_name":"Creating"}"#),
                ))
                .await,
        )
    });
    gate.reached().await;
    let page = store
        .query_owner(&caller::owner_keys("alice")[0], 100, None)
        .await
        .unwrap();
    let creating: Vec<_> = page
        .records
        .iter()
        .filter(|r| r.state == WakeState::Creating)
        .collect();
    assert_eq!(creating.len(), 1, "{:?}", page.records);
    let created = creating[0].key.agent_id.clone();
    busy(
        &post(&api, &created, "keepalive", Some(r#"{"ttl_s":600}"#)).await,
        "creating",
    );
    gate.release.notify_one();
    let (status, body) = create.await.unwrap();
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["agent_id"], created.as_str());
    assert_eq!(sent_ttls(&ctl), sent);
    let session = body["session"]["session_id"].as_str().unwrap().to_string();
    kept_alive(&api, &ctl, &created, &session, 600).await;
    assert_eq!(sent_ttls(&ctl), sent + 1);
}
