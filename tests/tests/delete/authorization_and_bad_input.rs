//! Authorisation and bad input, from API Gateway v2 requests: who may delete an agent or a
//! snapshot and what bad input answers.

use super::*;

// ---------------------------------------------------------------------------------------------
// Authorisation and bad input

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_may_delete_and_what_bad_input_answers() {
    let (store, world, _) = deployed_shared("delauthz", Duration::ZERO).await;
    let (agent_id, snapshot) = world.asleep_agent("alice", "Mine");
    let f = delete_fn(store.clone(), world.client(), delete_settings(&quick()));
    let call = |method: &str, p: String, who: Who<'static>| {
        let r = request(method, &p, who, None);
        let f = &f;
        async move { answer(&f.handle(r).await) }
    };

    for p in [agent_path(&agent_id), snapshot_path(&agent_id, &snapshot)] {
        let (status, body) = call("DELETE", p.clone(), Who::User("mallory")).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (404, Some("AGENT_NOT_FOUND")),
            "{p}"
        );
        let (status, body) = call("DELETE", p.clone(), Who::Nobody).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (401, Some("UNAUTHENTICATED")),
            "{p}"
        );
    }
    let unknown = "studio-alice-00000000000000000000000000000000";
    let bad: Vec<(&str, String, u16)> = vec![
        ("DELETE", "/v1/agents/gpt/x".into(), 400),
        ("DELETE", "/v1/agents/Codex/x".into(), 400),
        ("DELETE", agent_path(&"a".repeat(201)), 400),
        ("DELETE", agent_path("a%2Fb"), 400),
        ("DELETE", agent_path("a%00b"), 400),
        ("DELETE", snapshot_path(&agent_id, "..%2Fx"), 400),
        ("DELETE", snapshot_path(&agent_id, &"s".repeat(201)), 400),
        ("DELETE", agent_path(unknown), 404),
        ("DELETE", snapshot_path(unknown, "snap-1"), 404),
        ("DELETE", "/v1/agents/codex/x/snapshots".into(), 404),
        ("GET", agent_path(&agent_id), 405),
        ("POST", snapshot_path(&agent_id, &snapshot), 405),
    ];
    for (method, p, want) in bad {
        let (status, body) = call(method, p.clone(), Who::User("alice")).await;
        assert_eq!(status, want, "{method} {p}: {body}");
        assert!(body["code"].is_string(), "problem+json for {p}");
    }
    let resp = f
        .handle(alices_request("GET", &agent_path(&agent_id)))
        .await;
    assert_eq!(resp.headers()["allow"], "DELETE");

    // `snapshot-<id>` agents are admin-only.
    let ctl = world.sim.control();
    let orphan = ctl
        .seed_snapshot(snapwake_sim::SeedSnapshot {
            tool_id: world.recoverable.clone(),
            ..Default::default()
        })
        .unwrap();
    let orphan_agent = format!("snapshot-{orphan}");
    let (status, _) = call(
        "DELETE",
        snapshot_path(&orphan_agent, &orphan),
        Who::User("alice"),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = call(
        "DELETE",
        snapshot_path(&orphan_agent, "snap-other"),
        Who::Admin("root"),
    )
    .await;
    assert_eq!(status, 404, "a snapshot agent has only its own snapshot");
    assert!(ctl.snapshot(&orphan).is_some());
    let (status, body) = call("DELETE", agent_path(&orphan_agent), Who::Admin("root")).await;
    assert_eq!(status, 204, "{body}");
    assert!(ctl.snapshot(&orphan).is_none());

    // Nothing was deleted by any refused request; an admin may delete anyone's snapshot.
    assert!(ctl.snapshot(&snapshot).is_some());
    let (status, body) = call(
        "DELETE",
        snapshot_path(&agent_id, &snapshot),
        Who::Admin("root"),
    )
    .await;
    assert_eq!(status, 204, "{body}");
    assert!(ctl.snapshot(&snapshot).is_none());
    let record = store.get(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(
        record.description.owner, None,
        "the admin is not recorded as the owner"
    );
    let (status, body) = call("DELETE", agent_path(&agent_id), Who::Admin("root")).await;
    assert_eq!(status, 204, "{body}");
}
