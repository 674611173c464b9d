//! Pagination: stable pages and tamper-evident tokens.

use super::*;

#[tokio::test]
async fn pagination_is_stable_and_tokens_are_tamper_evident() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("rec", true)).unwrap();
    let base = ctl.now() - time::Duration::days(1);
    let seeds = (0..25)
        .map(|i| SeedSnapshot {
            tool_id: t.clone(),
            snapshot_id: Some(format!("snap-{i:02}")),
            user_session_id: Some(format!("u-{}", i % 2)),
            created_at: Some(base + time::Duration::minutes(i)),
            ..Default::default()
        })
        .collect();
    ctl.seed_snapshots(seeds).unwrap();

    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut body = json!({"ToolId": t, "MaxResults": 10});
        if let Some(tok) = &token {
            body["NextToken"] = json!(tok);
        }
        let a = c.call("ListSessionSnapshots", body).await;
        let r = a.result().clone();
        pages += 1;
        seen.extend(
            r["Snapshots"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["SnapshotId"].as_str().unwrap().to_string()),
        );
        token = r["NextToken"].as_str().map(str::to_string);
        if token.is_none() {
            break;
        }
        if pages == 1 {
            // An insert between pages, older than the cursor, does not shift the next page.
            ctl.seed_snapshot(SeedSnapshot {
                tool_id: t.clone(),
                snapshot_id: Some("snap-early".into()),
                created_at: Some(base - time::Duration::minutes(5)),
                ..Default::default()
            })
            .unwrap();
        }
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = (0..25).map(|i| format!("snap-{i:02}")).collect();
    assert_eq!(seen, expected);

    // Default page size is 10.
    let a = c.call("ListSessionSnapshots", json!({"ToolId": t})).await;
    let first = a.result().clone();
    assert_eq!(first["Snapshots"].as_array().unwrap().len(), 10);
    let tok = first["NextToken"].as_str().unwrap().to_string();

    // Forged and altered tokens.
    for bad in [
        "forged",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        &tok[1..],
    ] {
        let a = c
            .call(
                "ListSessionSnapshots",
                json!({"ToolId": t, "NextToken": bad}),
            )
            .await;
        assert_eq!(a.status, 400, "{bad}");
        assert_eq!(a.code(), "InvalidParameter.NextToken");
    }
    // Reused with other filters, another Tool, another action.
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-1", "NextToken": tok}),
        )
        .await;
    assert_eq!(a.status, 400);
    let t2 = ctl.seed_tool(BJ, tool("other", true)).unwrap();
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t2, "NextToken": tok}),
        )
        .await;
    assert_eq!(a.status, 400);
    let a = c
        .call("ListSessions", json!({"ToolId": t, "NextToken": tok}))
        .await;
    assert_eq!(a.status, 400);
    // The same filters with another page size are fine.
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "NextToken": tok, "MaxResults": 100}),
        )
        .await;
    // snap-early now opens the listing, so 16 remain after the first page of 10.
    assert_eq!(a.result()["Snapshots"].as_array().unwrap().len(), 16);

    // Filtered pagination through the UserSessionId index.
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-1", "MaxResults": 5}),
        )
        .await;
    let r = a.result().clone();
    assert_eq!(r["Snapshots"].as_array().unwrap().len(), 5);
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-1", "MaxResults": 100, "NextToken": r["NextToken"]}),
        )
        .await;
    let rest = a.result()["Snapshots"].as_array().unwrap().clone();
    assert_eq!(rest.len(), 7);
    assert!(rest.iter().all(|s| s["UserSessionId"] == "u-1"));
}
