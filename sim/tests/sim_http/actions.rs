//! The actions and their filters: tools live in one region, the tool and session actions with
//! their filters, and every action refusing unknown fields.

use super::*;

#[tokio::test]
async fn tools_live_in_one_region() {
    let (_s, ctl, bj) = sim().await;
    let sh = Caller::new(&bj.endpoint).region(SH);
    let t = ctl.seed_tool(SH, tool("hermes", true)).unwrap();
    let a = bj.call("GetTool", json!({"ToolId": t})).await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));
    let a = bj
        .call("CreateSession", create_session_body(&t, "u-1", "alice"))
        .await;
    assert_eq!(a.status, 404);
    let a = sh.call("GetTool", json!({"ToolId": t})).await;
    assert_eq!(a.result()["Status"], "Ready");
    assert_eq!(a.body["ResponseMetadata"]["Region"], SH);
    let a = bj
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.result()["Tools"].as_array().unwrap().len(), 0);
    let a = sh
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.result()["Tools"][0]["ToolId"], t.as_str());
}

#[tokio::test]
async fn tool_actions_and_filters() {
    let (_s, ctl, c) = sim().await;
    // More than 3 writes happen here; the throttle has its own test.
    ctl.set_tool_write_limit(None);
    ctl.set_tool_ready_delay(Duration::from_secs(30));
    let a = c.call("CreateTool", create_tool_body("codex")).await;
    let id = a.result()["ToolId"].as_str().unwrap().to_string();
    let a = c.call("GetTool", json!({"ToolId": id})).await;
    assert_eq!(a.result()["Status"], "Creating");
    // Not Ready yet: no sessions.
    let a = c
        .call("CreateSession", create_session_body(&id, "u", "alice"))
        .await;
    assert_eq!((a.status, a.code()), (409, "InvalidResource.Status"));
    ctl.advance(Duration::from_secs(31));
    let a = c.call("GetTool", json!({"ToolId": id})).await;
    assert_eq!(a.result()["Status"], "Ready");
    assert_eq!(a.result()["EnableSnapshot"], true);

    c.call("CreateTool", create_tool_body("openclaw"))
        .await
        .result();
    let a = c
        .call(
            "ListTools",
            json!({"ProjectName": "default", "Filters": [{"Name": "Name", "Values": ["codex"]}]}),
        )
        .await;
    let tools = a.result()["Tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["ToolId"], id.as_str());
    let a = c.call("ListTools", json!({"ProjectName": "other"})).await;
    assert!(a.result()["Tools"].as_array().unwrap().is_empty());
    let a = c
        .call(
            "ListTools",
            json!({"ProjectName": "default", "Filters": [{"Name": "Bogus", "Values": ["x"]}]}),
        )
        .await;
    assert_eq!(a.status, 400);

    let a = c
        .call(
            "UpdateTool",
            json!({"ToolId": id, "EnableSnapshot": false, "Envs": [{"Key": "A", "Value": "1"}]}),
        )
        .await;
    a.result();
    let t = c.call("GetTool", json!({"ToolId": id})).await;
    assert_eq!(t.result()["EnableSnapshot"], false);
    assert_eq!(t.result()["Envs"], json!([{"Key": "A", "Value": "1"}]));
    let a = c
        .call(
            "UpdateTool",
            json!({"ToolId": "t-nope", "EnableSnapshot": true}),
        )
        .await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));
    let a = c.call("UpdateTool", json!({"ToolId": id})).await;
    assert_eq!(a.status, 400);
}

#[tokio::test]
async fn session_actions_and_filters() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", false)).unwrap();
    let a = c
        .call(
            "CreateSession",
            create_session_body(&t, "u-alice-1", "alice"),
        )
        .await;
    let r = a.result();
    let s1 = r["SessionId"].as_str().unwrap().to_string();
    assert_eq!(r["UserSessionId"], "u-alice-1");
    assert!(r["Endpoint"].as_str().unwrap().contains("?auth="));
    c.call(
        "CreateSession",
        create_session_body(&t, "u-alice-2", "alice"),
    )
    .await
    .result();
    c.call("CreateSession", create_session_body(&t, "u-bob-1", "bob"))
        .await
        .result();

    let a = c
        .call("GetSession", json!({"ToolId": t, "SessionId": s1}))
        .await;
    let s = a.result();
    assert_eq!(s["Status"], "Ready");
    assert_eq!(s["ToolType"], "CodeEnv");
    assert_eq!(s["Metadata"][0]["Value"], "alice");
    let created = OffsetDateTime::parse(
        s["CreatedAt"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let expires = OffsetDateTime::parse(
        s["ExpireAt"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!(expires - created, time::Duration::hours(8));

    let ids = |a: &Answer| -> Vec<String> {
        a.result()["SessionInfos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["UserSessionId"].as_str().unwrap().to_string())
            .collect()
    };
    let a = c
        .call(
            "ListSessions",
            json!({"ToolId": t, "Metadata": [{"Key": "Username", "Value": "alice"}]}),
        )
        .await;
    assert_eq!(ids(&a), ["u-alice-1", "u-alice-2"]);
    let a = c
        .call(
            "ListSessions",
            json!({"ToolId": t, "Filters": [{"Name": "UserSessionId", "Values": ["u-bob-1", "u-alice-2"]}]}),
        )
        .await;
    assert_eq!(ids(&a), ["u-alice-2", "u-bob-1"]);
    let a = c
        .call(
            "ListSessions",
            json!({"ToolId": t, "Metadata": [{"Key": "Username", "Value": "alice"}],
                   "Filters": [{"Name": "UserSessionId", "Values": ["u-bob-1"]}]}),
        )
        .await;
    assert!(ids(&a).is_empty());

    let a = c
        .call("DeleteSession", json!({"ToolId": t, "SessionId": s1}))
        .await;
    a.result();
    let a = c
        .call("GetSession", json!({"ToolId": t, "SessionId": s1}))
        .await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));
    let a = c
        .call("DeleteSession", json!({"ToolId": t, "SessionId": s1}))
        .await;
    assert_eq!(a.status, 404);
    assert!(ctl.snapshots().is_empty(), "delete leaves no snapshot");
}

#[tokio::test]
async fn every_action_refuses_unknown_fields() {
    let (_s, ctl, c) = sim().await;
    let rec = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    for (action, body) in [
        ("ListSessions", json!({"ToolId": rec, "Bogus": 1})),
        (
            "GetSession",
            json!({"ToolId": rec, "SessionId": "s", "Bogus": 1}),
        ),
        ("ListSessionSnapshots", json!({"ToolId": rec, "Bogus": 1})),
        (
            "CreateSessionSnapshot",
            json!({"ToolId": rec, "SessionId": "s", "Bogus": 1}),
        ),
        (
            "GetSessionSnapshot",
            json!({"ToolId": rec, "SnapshotId": "s", "Bogus": 1}),
        ),
        (
            "SetSessionTtl",
            json!({"ToolId": rec, "SessionId": "s", "Ttl": 60, "TtlUnit": "second", "Bogus": 1}),
        ),
        ("GetTool", json!({"ToolId": rec, "Bogus": 1})),
    ] {
        let a = c.call(action, body).await;
        assert_eq!((a.status, a.code()), (400, "InvalidParameter"), "{action}");
    }
}
