//! The control surface over HTTP, a large world seeded in bulk, and serving: on a fixed port
//! until a signal, and apart on threads of its own until dropped.

use super::*;

#[tokio::test]
async fn control_surface_over_http() {
    let (s, ctl, c) = sim().await;
    let http = reqwest::Client::new();
    let url = |p: &str| format!("{}{p}", s.endpoint());
    let post = |p: &str, body: Value| http.post(url(p)).json(&body).send();

    let r: Value = post("/_sim/clock/set", json!({"now": "2030-01-01T00:00:00Z"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(r["now"].as_str().unwrap().starts_with("2030-01-01T00:00"));
    let r: Value = post("/_sim/clock/advance", json!({"seconds": 3600}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(r["now"].as_str().unwrap().starts_with("2030-01-01T01:00"));

    let r: Value = post(
        "/_sim/tools",
        json!({"region": SH, "tool_id": "t-fixed", "name": "n", "tool_type": "HermesEnv", "enable_snapshot": true}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(r["tool_id"], "t-fixed");
    let r = post(
        "/_sim/tools",
        json!({"region": "mars", "name": "n", "tool_type": "X"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let r: Value = post(
        "/_sim/sessions",
        json!({"tool_id": "t-fixed", "session_id": "s-1", "user_session_id": "u-1",
               "metadata": [{"Key": "Username", "Value": "al"}]}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(r["session_id"], "s-1");
    let r: Value = post(
        "/_sim/snapshots",
        json!([{"tool_id": "t-fixed", "snapshot_id": "snap-a", "user_session_id": "u-2"},
               {"tool_id": "t-fixed", "snapshot_id": "snap-b"}]),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(r["snapshot_ids"], json!(["snap-a", "snap-b"]));
    let r = post("/_sim/snapshots", json!({"tool_id": "t-none"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r: Value = http
        .get(url("/_sim/snapshots/snap-a"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["UserSessionId"], "u-2");
    assert_eq!(r["Reason"], "Expired");

    let r: Value = post(
        "/_sim/settings",
        json!({"session_ready_delay_ms": 5000, "tool_write_limit": null}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        r,
        json!({"session_ready_delay_ms": 5000, "tool_ready_delay_ms": 0,
               "snapshot_ready_delay_ms": 0, "snapshot_outcome": "Ready",
               "expiry_snapshot_delay_ms": 3000, "expiry_snapshot_hidden_ms": 0,
               "expiry_snapshot_outcome": "Ready", "stuck_sessions": 0,
               "tool_write_limit": null, "rate_limits": {}})
    );
    assert_eq!(ctl.settings().2, None);
    let r: Value = post(
        "/_sim/settings",
        json!({"snapshot_ready_delay_ms": 1500, "snapshot_outcome": "Failed"}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        (&r["snapshot_ready_delay_ms"], &r["snapshot_outcome"]),
        (&json!(1500), &json!("Failed"))
    );
    assert_eq!(ctl.snapshot_outcome(), "Failed");
    assert_eq!(ctl.snapshot_ready_delay(), Duration::from_millis(1500));

    let r = post(
        "/_sim/faults",
        json!({"action": "GetSession", "error": {"code": "InvalidResource.NotFound", "status": 404},
               "trigger": {"next": 1}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let sh = Caller::new(&c.endpoint).region(SH);
    let a = sh
        .call(
            "GetSession",
            json!({"ToolId": "t-fixed", "SessionId": "s-1"}),
        )
        .await;
    assert_eq!(a.status, 404);
    let a = sh
        .call(
            "GetSession",
            json!({"ToolId": "t-fixed", "SessionId": "s-1"}),
        )
        .await;
    assert_eq!(a.result()["Status"], "Ready");
    let r = post("/_sim/faults", json!({"trigger": {"rate": 2.0}}))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = http.delete(url("/_sim/faults")).send().await.unwrap();
    assert_eq!(r.status(), 200);

    let r: Value = http
        .get(url("/_sim/counters"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["actions"]["GetSession"]["received"], 2);
    assert_eq!(r["actions"]["GetSession"]["succeeded"], 1);
    assert_eq!(r["live_sessions"]["u-1"], 1);
    let r = post("/_sim/counters/reset", json!({})).await.unwrap();
    assert!(r.status().is_success());
    assert!(ctl.counters().actions.is_empty());
}

#[tokio::test]
async fn a_large_world_seeds_in_bulk_and_lists_one_owner_by_index() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("rec", true)).unwrap();
    let seeds: Vec<SeedSnapshot> = (0..20_000)
        .map(|i| SeedSnapshot {
            tool_id: t.clone(),
            user_session_id: Some(format!("owner-{}", i % 1000)),
            session_metadata: vec![MetadataEntry::string(
                "Username",
                format!("owner-{}", i % 1000),
            )],
            ..Default::default()
        })
        .collect();
    let ids = ctl.seed_snapshots(seeds).unwrap();
    assert_eq!(ids.len(), 20_000);
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "owner-7", "MaxResults": 100}),
        )
        .await;
    let r = a.result();
    assert_eq!(r["Snapshots"].as_array().unwrap().len(), 20);
    assert!(r["NextToken"].is_null());
}

#[tokio::test]
async fn start_on_a_fixed_port_and_serve_until_a_signal() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let s = Simulator::start(SimConfig {
        port,
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(s.endpoint(), format!("http://127.0.0.1:{port}"));
    let endpoint = s.endpoint();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(s.serve_until(async {
        let _ = rx.await;
    }));
    let a = Caller::new(&endpoint)
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.status, 200);
    tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .unwrap()
        .unwrap();
    // The port is free again.
    let again = Simulator::start(SimConfig {
        port,
        ..Default::default()
    })
    .await
    .unwrap();
    again.shutdown().await;
}

/// A simulator served on threads of its own answers like any other, and dropping it stops its
/// runtime and frees its port.
#[tokio::test]
async fn a_simulator_served_apart_answers_and_stops_when_dropped() {
    let s = Simulator::start_apart(SimConfig::default()).unwrap();
    let addr = s.addr();
    let a = Caller::new(&s.endpoint())
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    drop(s);
    // Its runtime stops on its own thread: the port frees within moments, not at exit.
    let freed = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match std::net::TcpListener::bind(addr) {
            Ok(_) => break,
            Err(_) if std::time::Instant::now() < freed => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("{addr} still taken after the simulator was dropped: {e}"),
        }
    }
}
