//! Expiry: on a recoverable tool it makes a snapshot that Resume makes new sessions from, on a
//! temporary tool it leaves nothing, only Ready snapshots resume, seeded sessions past their
//! expiry become snapshots, and expiry snapshots take time, can hide and can fail.

use super::*;

#[tokio::test]
async fn expiry_on_a_recoverable_tool_makes_a_snapshot_and_resume_makes_new_sessions() {
    let (_s, ctl, c) = sim().await;
    ctl.set_session_ready_delay(Duration::from_secs(60));
    let t = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-1", "alice"))
        .await;
    let sid = a.result()["SessionId"].as_str().unwrap().to_string();
    let get = json!({"ToolId": t, "SessionId": sid});
    assert_eq!(
        c.call("GetSession", get.clone()).await.result()["Status"],
        "Creating"
    );
    ctl.advance(Duration::from_secs(61));
    assert_eq!(
        c.call("GetSession", get.clone()).await.result()["Status"],
        "Ready"
    );
    assert_eq!(ctl.counters().live_sessions_of("u-1"), 1);

    ctl.advance(Duration::from_secs(8 * 3600));
    assert_eq!(c.call("GetSession", get).await.status, 404);
    let a = c.call("ListSessions", json!({"ToolId": t})).await;
    assert!(a.result()["SessionInfos"].as_array().unwrap().is_empty());

    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-1"}),
        )
        .await;
    let snaps = a.result()["Snapshots"].as_array().unwrap().clone();
    assert_eq!(snaps.len(), 1);
    let snap = &snaps[0];
    assert_eq!(snap["Status"], "Ready");
    assert_eq!(snap["Reason"], "Expired");
    assert_eq!(snap["SessionId"], sid.as_str());
    assert_eq!(snap["ToolId"], t.as_str());
    assert_eq!(snap["SessionMetadata"][0]["Key"], "Username");
    assert_eq!(snap["SessionMetadata"][0]["Value"], "alice");
    let snap_id = snap["SnapshotId"].as_str().unwrap().to_string();
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "SessionId": sid}),
        )
        .await;
    assert_eq!(a.result()["Snapshots"].as_array().unwrap().len(), 1);
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-2"}),
        )
        .await;
    assert!(a.result()["Snapshots"].as_array().unwrap().is_empty());

    let resume =
        json!({"ToolId": t, "SnapshotId": snap_id, "Ttl": 28800, "CreateNewInstance": false});
    let r1 = c.call("ResumeSessionFromSnapshot", resume.clone()).await;
    let r2 = c.call("ResumeSessionFromSnapshot", resume).await;
    let (n1, n2) = (
        r1.result()["SessionId"].as_str().unwrap().to_string(),
        r2.result()["SessionId"].as_str().unwrap().to_string(),
    );
    assert_ne!(n1, n2);
    assert_ne!(n1, sid);
    let s = ctl.session(&n1).unwrap();
    assert_eq!(s.user_session_id.as_deref(), Some("u-1"));
    assert_eq!(s.metadata, vec![MetadataEntry::string("Username", "alice")]);
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&snap_id), 2);
    assert_eq!(counters.live_sessions_of("u-1"), 2);
    assert!(ctl.snapshot(&snap_id).is_some(), "the snapshot remains");

    let del = json!({"ToolId": t, "SnapshotId": snap_id});
    let a = c.call("DeleteSessionSnapshot", del.clone()).await;
    assert_eq!(a.result()["SnapshotId"], snap_id.as_str());
    assert_eq!(c.call("DeleteSessionSnapshot", del).await.status, 404);
    let a = c
        .call(
            "ResumeSessionFromSnapshot",
            json!({"ToolId": t, "SnapshotId": snap_id, "Ttl": 28800, "CreateNewInstance": false}),
        )
        .await;
    assert_eq!(a.status, 404);
}

#[tokio::test]
async fn only_ready_snapshots_resume_and_expiry_on_a_temporary_tool_leaves_nothing() {
    let (_s, ctl, c) = sim().await;
    let temp = ctl.seed_tool(BJ, tool("tmp", false)).unwrap();
    c.call("CreateSession", create_session_body(&temp, "u-t", "alice"))
        .await
        .result();
    ctl.advance(Duration::from_secs(28_801));
    assert!(ctl.sessions().is_empty());
    assert!(ctl.snapshots().is_empty());
    assert_eq!(ctl.counters().live_sessions_of("u-t"), 0);

    let rec = ctl.seed_tool(BJ, tool("rec", true)).unwrap();
    let snap = ctl
        .seed_snapshot(SeedSnapshot {
            tool_id: rec.clone(),
            user_session_id: Some("u-x".into()),
            status: Some("Creating".into()),
            ..Default::default()
        })
        .unwrap();
    let a = c
        .call(
            "ResumeSessionFromSnapshot",
            json!({"ToolId": rec, "SnapshotId": snap, "Ttl": 28800, "CreateNewInstance": false}),
        )
        .await;
    assert_eq!((a.status, a.code()), (409, "InvalidResource.Status"));
    assert_eq!(ctl.counters().resumes_of(&snap), 0);
}

#[tokio::test]
async fn seeded_sessions_past_their_expiry_become_snapshots() {
    let (_s, ctl, _c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("rec", true)).unwrap();
    let long_ago = ctl.now() - time::Duration::hours(9);
    let sid = ctl
        .seed_session(SeedSession {
            tool_id: t,
            user_session_id: Some("u-9".into()),
            created_at: Some(long_ago),
            metadata: vec![MetadataEntry::string("Username", "zoe")],
            ..Default::default()
        })
        .unwrap();
    assert!(ctl.session(&sid).is_none());
    let snaps = ctl.snapshots();
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0].session_id.as_deref(), Some(sid.as_str()));
    assert_eq!(
        snaps[0].created_at.as_deref().unwrap(),
        snapwake_ts(long_ago + time::Duration::hours(8))
    );
}

fn snapwake_ts(t: OffsetDateTime) -> String {
    snapwake::ambient::format(t)
}

/// AgentKit's own time: the snapshot of an expired session is `Creating` for a while after the
/// session's ExpireAt (3 s by default), may be missing from listings for a moment, and may end
/// `Failed`; a clock jumped far past the expiry finds it finished.
#[tokio::test]
async fn expiry_snapshots_take_time_can_hide_and_can_fail() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    let list = |usid: &str| json!({"ToolId": t, "UserSessionId": usid});
    let seed = |usid: &str| {
        ctl.seed_session(SeedSession {
            tool_id: t.clone(),
            user_session_id: Some(usid.into()),
            ttl_secs: Some(60),
            ..SeedSession::default()
        })
        .unwrap()
    };

    // Default: Creating right after the expiry, Ready 3 s after it.
    seed("u-1");
    ctl.advance(Duration::from_secs(60));
    let a = c.call("ListSessionSnapshots", list("u-1")).await;
    let snap = a.result()["Snapshots"][0].clone();
    assert_eq!(snap["Status"], "Creating", "{snap}");
    let id = snap["SnapshotId"].as_str().unwrap().to_string();
    let resume = json!({"ToolId": t, "SnapshotId": id, "Ttl": 28800, "CreateNewInstance": false});
    assert_eq!(
        c.call("ResumeSessionFromSnapshot", resume).await.status,
        409
    );
    ctl.advance(Duration::from_secs(4));
    let a = c
        .call("GetSessionSnapshot", json!({"ToolId": t, "SnapshotId": id}))
        .await;
    assert_eq!(a.result()["Snapshot"]["Status"], "Ready");

    // Hidden for 10 s, then Failed after 20 s.
    ctl.set_expiry_snapshot_hidden(Duration::from_secs(10));
    ctl.set_expiry_snapshot_delay(Duration::from_secs(20));
    ctl.set_expiry_snapshot_outcome("Failed");
    seed("u-2");
    ctl.advance(Duration::from_secs(61));
    let a = c.call("ListSessionSnapshots", list("u-2")).await;
    assert!(
        a.result()["Snapshots"].as_array().unwrap().is_empty(),
        "hidden"
    );
    ctl.advance(Duration::from_secs(10));
    let a = c.call("ListSessionSnapshots", list("u-2")).await;
    assert_eq!(a.result()["Snapshots"][0]["Status"], "Creating");
    ctl.advance(Duration::from_secs(20));
    let a = c.call("ListSessionSnapshots", list("u-2")).await;
    assert_eq!(a.result()["Snapshots"][0]["Status"], "Failed");

    // The same settings over the control surface.
    let http = reqwest::Client::new();
    let url = format!("{}/_sim/settings", _s.endpoint());
    let v: Value = http
        .post(&url)
        .json(
            &json!({"expiry_snapshot_delay_ms": 1500, "expiry_snapshot_hidden_ms": 0,
                      "expiry_snapshot_outcome": "Ready", "stuck_sessions": 2}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["expiry_snapshot_delay_ms"], 1500);
    assert_eq!(v["expiry_snapshot_hidden_ms"], 0);
    assert_eq!(v["expiry_snapshot_outcome"], "Ready");
    assert_eq!(v["stuck_sessions"], 2);
}
