//! The expiry a keepalive sets: moved by the TTL on AgentKit's clock each time, followed by the
//! record so the agent does not expire at its old time, and the answer the agent as a read
//! shows it.

use super::*;

#[tokio::test]
async fn keepalive_moves_the_expiry_by_the_ttl_on_agentkits_clock_each_time() {
    let (world, store, api, ctl) = setup("keepalive-moves").await;
    let (agent_id, session_id) = awake_agent(&world, &api).await;
    let created = sim_expiry(&ctl, &session_id);

    let first = kept_alive(&api, &ctl, &agent_id, &session_id, 3600).await;
    assert!(first < created, "an hour from now is before the 8 h expiry");
    assert_eq!(sent_ttls(&ctl), 1);
    assert_eq!(
        recorded_expiry(&store, &agent_id).await.map(|s| ts(&s)),
        Some(first),
        "the record follows"
    );

    // Each keepalive counts from the simulator's now, wherever its clock is.
    let mut last = first;
    for (round, (advance, ttl_s)) in [(600, 7200), (1800, 28_800), (3600, 60)]
        .into_iter()
        .enumerate()
    {
        ctl.advance(Duration::from_secs(advance));
        let new = kept_alive(&api, &ctl, &agent_id, &session_id, ttl_s).await;
        assert_ne!(new, last, "round {round}: the expiry moved");
        assert_eq!(sent_ttls(&ctl), 2 + round as u64);
        assert_eq!(
            recorded_expiry(&store, &agent_id).await.map(|s| ts(&s)),
            Some(new),
            "round {round}: the record follows"
        );
        last = new;
    }

    // What a reader sees afterwards is the new expiry, whether it asks the list function
    // (live) or resumes (which may answer from the record).
    let resp = on_agent(&api, "GET", &agent_id).await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 200, "{body}");
    assert_eq!(expire_at(&body), last, "{body}");
    assert_no_endpoint(&body);
    let (status, body) = answer(&post(&api, &agent_id, "resume", None).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resumed"], false, "{body}");
    assert_eq!(body["session"]["session_id"], session_id.as_str());
    assert_eq!(expire_at(&body), last, "{body}");
    assert_no_endpoint(&body);
    // An admin's page of everyone comes from the records: it shows the new expiry too.
    let mut ev = event("GET", "/v1/agents", Who::Admin("root"), None);
    ev["rawQueryString"] = "owner=*&limit=100".into();
    let (status, page) = answer(&api.handle(from_event(&ev)).await);
    assert_eq!(status, 200, "{page}");
    let listed = page["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|v| v["agent_id"] == agent_id.as_str()))
        .unwrap_or_else(|| panic!("the agent is listed: {page}"));
    assert_eq!(expire_at(listed), last, "{listed}");
    assert_no_endpoint(&page);
}

#[tokio::test]
async fn an_agent_kept_alive_does_not_expire_at_its_old_time() {
    let (world, store, api, ctl) = setup("keepalive-outlives").await;
    let (agent_id, session_id) = awake_agent(&world, &api).await;
    let old = sim_expiry(&ctl, &session_id);
    assert!(old > ctl.now() + 7 * HOUR, "a session lives 8 h");

    // Two hours in, keep it alive for eight more: it now ends two hours after it would have.
    ctl.advance(2 * HOUR);
    let new = kept_alive(&api, &ctl, &agent_id, &session_id, 28_800).await;
    assert!(new - old >= time::Duration::seconds(7190), "{old} → {new}");

    // Past the old expiry, before the new one: the session is still active, and a resume
    // answers with it, awake all along.
    ctl.advance(7 * HOUR);
    assert!(ctl.now() > old && ctl.now() < new);
    let live = ctl
        .session(&session_id)
        .expect("the session outlived its old expiry");
    assert_eq!(live.status.as_deref(), Some("Ready"));
    let (status, body) = answer(&post(&api, &agent_id, "resume", None).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resumed"], false, "{body}");
    assert_eq!(body["state"], "awake", "{body}");
    assert_eq!(body["session"]["session_id"], session_id.as_str(), "{body}");
    assert_eq!(expire_at(&body), new, "{body}");
    assert_no_endpoint(&body);
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 1);

    // Past the new expiry: it has ended (into a snapshot, on a recoverable Tool), and a
    // keepalive has nothing left to keep alive.
    ctl.advance(HOUR + Duration::from_secs(5));
    assert!(ctl.now() > new);
    assert!(
        ctl.session(&session_id).is_none(),
        "the session ended at its new expiry"
    );
    assert!(ctl
        .sessions()
        .iter()
        .all(|s| s.user_session_id.as_deref() != Some(agent_id.as_str())));
    let expired: Vec<_> = ctl
        .snapshots()
        .into_iter()
        .filter(|s| s.session_id.as_deref() == Some(session_id.as_str()))
        .collect();
    assert_eq!(
        expired.len(),
        1,
        "the expiry left one snapshot: {expired:?}"
    );
    assert_eq!(expired[0].reason.as_deref(), Some("Expired"));
    assert_eq!(expired[0].created_at.as_deref().map(ts), Some(new));

    let sent = sent_ttls(&ctl);
    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");
    assert_eq!(sent_ttls(&ctl), sent, "nothing to send SetSessionTtl for");
    assert!(recorded_expiry(&store, &agent_id).await.is_some());
}
/// The answer is the agent as `GET /v1/agents/{kind}/{agent_id}` shows it right after (plus
/// `ttl_s`): the same retention, owner, name, session and snapshots, whether or not the agent
/// has a record yet.
#[tokio::test]
async fn the_answer_is_the_agent_as_a_read_shows_it() {
    let (world, _store, api, ctl) = setup("keepalive-view").await;
    let seed = |tool_id: &str, agent_id: &str| {
        ctl.seed_session(SeedSession {
            tool_id: tool_id.to_string(),
            user_session_id: Some(agent_id.to_string()),
            metadata: vec![
                MetadataEntry::string("Username", "alice"),
                MetadataEntry::string("veadk_display_name", "Seeded"),
            ],
            ..Default::default()
        })
        .unwrap()
    };

    // Woken through the API (a record that knows its snapshots).
    let (woken, _) = awake_agent(&world, &api).await;
    // Created temporary through the API (a record, no snapshots).
    let (status, body) = answer(&create_scratch(&api).await);
    assert_eq!(status, 201, "{body}");
    let created = body["agent_id"].as_str().unwrap().to_string();
    // A temporary session known only to AgentKit: no record, the Tool says temporary.
    let temporary = caller::mint("alice");
    seed(&world.temporary, &temporary);
    // A recoverable agent known only to AgentKit, with a live session and an older snapshot.
    let (recoverable, snapshot) = world.asleep_agent("alice", "Seeded");
    seed(&world.recoverable, &recoverable);

    let mut failed = Vec::new();
    for (what, agent_id) in [
        ("woken through the API", &woken),
        ("created temporary", &created),
        ("temporary, no record", &temporary),
        ("recoverable with a snapshot, no record", &recoverable),
    ] {
        let (status, mut kept) = keepalive(&api, agent_id, 900).await;
        assert_eq!(status, 200, "{what}: {kept}");
        assert_eq!(kept["ttl_s"], 900);
        kept.as_object_mut().unwrap().remove("ttl_s");
        let resp = on_agent(&api, "GET", agent_id).await;
        let (status, read) = answer(&resp);
        assert_eq!(status, 200, "{what}: {read}");
        let fields: std::collections::BTreeSet<&String> = kept
            .as_object()
            .unwrap()
            .keys()
            .chain(read.as_object().unwrap().keys())
            .collect();
        for field in fields {
            if kept[field] != read[field] {
                failed.push(format!(
                    "{what}: {field}: keepalive answered {}, a read shows {}",
                    kept[field], read[field]
                ));
            }
        }
    }
    assert!(
        ctl.snapshot(&snapshot).is_some(),
        "the recoverable agent's snapshot is still there"
    );
    assert!(failed.is_empty(), "\n  {}", failed.join("\n  "));
}
