//! Snapshots on request and session TTLs, and sessions that stay starting or take any status.

use super::*;

#[tokio::test]
async fn snapshots_on_request_and_session_ttls() {
    let (_s, ctl, c) = sim().await;
    let rec = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    let tmp = ctl.seed_tool(BJ, tool("codex-tmp", false)).unwrap();
    ctl.set_snapshot_ready_delay(Duration::from_secs(30));
    let meta = vec![MetadataEntry::string("Username", "alice")];
    let sess = ctl
        .seed_session(SeedSession {
            tool_id: rec.clone(),
            user_session_id: Some("u-sleepy".into()),
            metadata: meta.clone(),
            ..SeedSession::default()
        })
        .unwrap();

    // A snapshot on request: Creating, then Ready; the session goes on.
    let a = c
        .call(
            "CreateSessionSnapshot",
            json!({"SessionId": sess, "ToolId": rec}),
        )
        .await;
    let snap = a.result()["SnapshotId"].as_str().unwrap().to_string();
    assert_eq!(a.result()["Status"], "Creating");
    let get = json!({"SnapshotId": snap, "ToolId": rec});
    let s = c.call("GetSessionSnapshot", get.clone()).await;
    let seen = &s.result()["Snapshot"];
    assert_eq!(seen["Status"], "Creating");
    assert_eq!(seen["UserSessionId"], "u-sleepy");
    assert_eq!(seen["SessionId"], sess.as_str());
    assert_eq!(seen["Reason"], "Manual");
    assert_eq!(seen["SessionMetadata"][0]["Value"], "alice");
    // Not wakeable until Ready.
    let resume = json!({"ToolId": rec, "SnapshotId": snap, "Ttl": 60, "CreateNewInstance": false});
    let r = c.call("ResumeSessionFromSnapshot", resume.clone()).await;
    assert_eq!((r.status, r.code()), (409, "InvalidResource.Status"));
    ctl.advance(Duration::from_secs(31));
    let s = c.call("GetSessionSnapshot", get).await;
    assert_eq!(s.result()["Snapshot"]["Status"], "Ready");
    assert!(ctl.session(&sess).is_some(), "the session went on");
    assert_eq!(
        c.call(
            "ListSessionSnapshots",
            json!({"ToolId": rec, "UserSessionId": "u-sleepy"})
        )
        .await
        .result()["Snapshots"][0]["Status"],
        "Ready"
    );

    // A Tool without snapshots, an ended session, an unknown one: refused as AgentKit does.
    let t = ctl
        .seed_session(SeedSession {
            tool_id: tmp.clone(),
            user_session_id: Some("u-tmp".into()),
            ..SeedSession::default()
        })
        .unwrap();
    let a = c
        .call(
            "CreateSessionSnapshot",
            json!({"SessionId": t, "ToolId": tmp}),
        )
        .await;
    assert_eq!((a.status, a.code()), (400, "OperationDenied"));
    let failed = ctl
        .seed_session(SeedSession {
            tool_id: rec.clone(),
            status: Some("Failed".into()),
            ..SeedSession::default()
        })
        .unwrap();
    let a = c
        .call(
            "CreateSessionSnapshot",
            json!({"SessionId": failed, "ToolId": rec}),
        )
        .await;
    assert_eq!((a.status, a.code()), (409, "InvalidResource.Status"));
    let a = c
        .call(
            "CreateSessionSnapshot",
            json!({"SessionId": "sess-none", "ToolId": rec}),
        )
        .await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));

    // A TTL from now, cut to AgentKit's 8 hours: the session outlives its old ExpireAt, and
    // ends at the new one.
    ctl.advance(Duration::from_secs(3600));
    let before = ctl.session(&sess).unwrap().expire_at.unwrap();
    let a = c
        .call(
            "SetSessionTtl",
            json!({"SessionId": sess, "ToolId": rec, "Ttl": 36000, "TtlUnit": "second"}),
        )
        .await;
    let moved = a.result()["ExpireAt"].as_str().unwrap().to_string();
    assert!(snapwake::ambient::sort_key(Some(&moved)) > snapwake::ambient::sort_key(Some(&before)));
    let cap = ctl.now() + time::Duration::hours(8);
    assert_eq!(
        moved,
        snapwake::ambient::format(cap),
        "10 h asked, 8 h granted"
    );
    assert_eq!(
        ctl.session(&sess).unwrap().expire_at.as_deref(),
        Some(moved.as_str())
    );
    ctl.advance(Duration::from_secs(7 * 3600 + 60));
    assert!(ctl.session(&sess).is_some(), "alive past its old expiry");
    ctl.advance(Duration::from_secs(2 * 3600));
    assert!(ctl.session(&sess).is_none(), "ended at its new one");
    let a = c
        .call(
            "SetSessionTtl",
            json!({"SessionId": sess, "ToolId": rec, "Ttl": 60, "TtlUnit": "second"}),
        )
        .await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));
    let counters = ctl.counters();
    assert_eq!(counters.received("CreateSessionSnapshot"), 4);
    assert_eq!(counters.received("SetSessionTtl"), 2);
}

/// Sessions that never get ready, and sessions in a status nobody documented.
#[tokio::test]
async fn sessions_can_stay_starting_or_take_any_status() {
    let (s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    ctl.set_stuck_sessions(1);
    let a = c
        .call("CreateSession", create_session_body(&t, "u-1", "alice"))
        .await;
    let stuck = a.result()["SessionId"].as_str().unwrap().to_string();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-2", "bob"))
        .await;
    let fine = a.result()["SessionId"].as_str().unwrap().to_string();
    ctl.advance(Duration::from_secs(3600));
    let get = |id: &str| json!({"ToolId": t, "SessionId": id});
    assert_eq!(
        c.call("GetSession", get(&stuck)).await.result()["Status"],
        "Starting"
    );
    assert_eq!(
        c.call("GetSession", get(&fine)).await.result()["Status"],
        "Ready"
    );

    ctl.set_session_status(&fine, Some("Paused")).unwrap();
    assert_eq!(
        c.call("GetSession", get(&fine)).await.result()["Status"],
        "Paused"
    );
    ctl.set_session_status(&fine, None).unwrap();
    assert_eq!(
        c.call("GetSession", get(&fine)).await.result()["Status"],
        "Ready"
    );
    assert!(ctl.set_session_status("sess-nobody", Some("x")).is_err());

    // Over HTTP.
    let http = reqwest::Client::new();
    let url = format!("{}/_sim/sessions/{stuck}/status", s.endpoint());
    let r = http
        .post(&url)
        .json(&json!({"status": "Hibernating"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        c.call("GetSession", get(&stuck)).await.result()["Status"],
        "Hibernating"
    );
    let url = format!("{}/_sim/sessions/sess-nobody/status", s.endpoint());
    let r = http
        .post(&url)
        .json(&json!({"status": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
