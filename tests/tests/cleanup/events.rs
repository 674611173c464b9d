//! EventBridge payloads as AWS delivers them, told apart and served by `invoke`.

use super::*;

#[test]
pub(crate) fn eventbridge_fixtures_are_told_apart() {
    assert!(matches!(
        classify(&fixture("scheduled-sweep-input.json")),
        Ok(Invocation::Sweep { every: None })
    ));
    assert!(matches!(
        classify(&fixture("scheduled-event.json")),
        Ok(Invocation::Sweep { every: None })
    ));
    match classify(&fixture("owner-offboarded.json")) {
        Ok(Invocation::Offboard { owner, .. }) => assert_eq!(owner, "alice"),
        other => panic!("offboarding classified as {other:?}"),
    }
    let http = event("DELETE", "/v1/agents/codex/x", Who::User("alice"), None);
    assert!(matches!(classify(&http), Ok(Invocation::Http(_))));

    // An S3 "Object Created" event: the error names what it is, never what it carries.
    let s3 = fixture("s3-object-created.json");
    let message = match classify(&s3) {
        Err(e) => e.to_string(),
        Ok(other) => panic!("an S3 event classified as {other:?}"),
    };
    assert!(message.contains("Object Created"), "{message}");
    assert!(message.contains("aws.s3"), "{message}");
    for value in [
        "studio-private-uploads",
        "credentials-backup",
        "111122223333",
        "203.0.113.15",
        "17793124-05d4-b198-2fde-7ededc63b103",
        "N4N7GDK58NMKJ12R",
        "PutObject",
        "us-east-1",
    ] {
        assert!(!message.contains(value), "{value:?} echoed: {message}");
    }

    // An SQS batch has neither: its keys name it, its values stay out.
    let sqs = fixture("sqs-batch.json");
    let message = match classify(&sqs) {
        Err(e) => e.to_string(),
        Ok(other) => panic!("an SQS batch classified as {other:?}"),
    };
    assert!(message.contains("Records"), "{message}");
    for value in [
        "export-everything",
        "alice",
        "studio-exports",
        "AQEBwJnKyrHigUMZj6rY",
        "059f36b4",
        "AIDAIENQZJOLO23YVJ4VO",
    ] {
        assert!(!message.contains(value), "{value:?} echoed: {message}");
    }

    // Not an object at all, and an offboarding without an owner.
    assert!(classify(&serde_json::json!(["sweep"])).is_err());
    let mut ownerless = fixture("owner-offboarded.json");
    ownerless["detail"] = serde_json::json!({ "owner": "  " });
    assert!(classify(&ownerless).is_err());
    // A schedule with some other detail is not the sweep's.
    let mut other_schedule = fixture("scheduled-event.json");
    other_schedule["detail"] = serde_json::json!({ "action": "deploy" });
    assert!(classify(&other_schedule).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn invoke_serves_http_the_sweep_and_offboarding_and_refuses_the_rest() {
    let (store, world, _) = deployed_shared("cleanup-invoke", Duration::ZERO).await;
    let fleet = seed_fleet(&world, &["carol"], 2, 5);
    let (doomed, _) = world.asleep_agent("alice", "Doomed by HTTP");
    world.more_snapshots("alice", &doomed, 2);
    let (kept, _) = world.asleep_agent("alice", "Offboarded");
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());

    // An API Gateway v2 DELETE: an API Gateway v2 response.
    let request = event(
        "DELETE",
        &format!("/v1/agents/codex/{doomed}"),
        Who::User("alice"),
        None,
    );
    let resp = f.invoke(request, context(60_000)).await.unwrap();
    assert_eq!(resp["statusCode"], 204, "{resp}");
    assert!(world.snapshots_of(&doomed).is_empty());
    assert_eq!(
        store.get(&codex(&doomed)).await.unwrap().unwrap().state,
        WakeState::Gone
    );

    // The schedule's constant input: the sweep's report.
    let report = f
        .invoke(fixture("scheduled-sweep-input.json"), context(60_000))
        .await
        .unwrap();
    assert_eq!(report["completed"], true, "{report}");
    assert_eq!(report["resumed"], false, "{report}");
    assert_eq!(report["already_running"], false, "{report}");
    assert_eq!(
        report["pruned"], 4,
        "carol's 2 agents lose 2 each: {report}"
    );
    assert_eq!(report["errors"], 0, "{report}");
    for (agent_id, seeded) in &fleet {
        assert_eq!(held(&world, agent_id), seeded.newest(3));
    }
    // The full envelope: the same sweep, nothing left to prune.
    let report = f
        .invoke(fixture("scheduled-event.json"), context(60_000))
        .await
        .unwrap();
    assert_eq!(
        (&report["completed"], &report["pruned"], &report["errors"]),
        (&Value::from(true), &Value::from(0), &Value::from(0)),
        "{report}"
    );

    // Offboarding: the report, alice's last agent gone.
    let report = f
        .invoke(fixture("owner-offboarded.json"), context(60_000))
        .await
        .unwrap();
    assert_eq!(report["owner"], "alice", "{report}");
    assert_eq!(report["failed"], 0, "{report}");
    assert_eq!(report["deleted"], 1, "{report}");
    assert!(world.snapshots_of(&kept).is_empty());

    // Anything else: an error, and nothing touched.
    let before = world.agentkit_calls();
    for unrelated in ["s3-object-created.json", "sqs-batch.json"] {
        let result = f.invoke(fixture(unrelated), context(60_000)).await;
        assert!(result.is_err(), "{unrelated}: {result:?}");
    }
    assert_eq!(
        world.agentkit_calls(),
        before,
        "an unrelated event does nothing"
    );
    for (agent_id, seeded) in &fleet {
        assert_eq!(held(&world, agent_id), seeded.newest(3), "carol untouched");
    }
}

/// The deployed schedule fires every 15 minutes with `"every_min": 60`: a run begins a pass
/// only an hour after the last began, and continues one in progress whenever it comes, so a
/// pass longer than one invocation still ends within its hour.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn a_scheduled_sweep_begins_a_pass_an_hour_apart_and_continues_one_at_every_run() {
    let (store, world, _) = deployed_shared("cleanup-every", Duration::ZERO).await;
    seed_fleet(&world, &["ann", "ben", "cat"], 4, 6);
    let scheduled = serde_json::json!({"action": "sweep", "every_min": 60});
    match classify(&scheduled) {
        Ok(Invocation::Sweep { every }) => assert_eq!(every, Some(Duration::from_secs(3600))),
        other => panic!("{other:?}"),
    }
    // Deletions slow enough that the first run ends out of time, its pass in progress.
    world.inject(Fault::latency(Some("DeleteSessionSnapshot"), 300));
    let margin = Duration::from_millis(1000);
    let f = cleanup_fn(store.clone(), world.client(), sweep_with_margin(margin, 2));
    let first = f.invoke(scheduled.clone(), context(2_500)).await.unwrap();
    assert_eq!(first["completed"], false, "{first}");
    // A run a quarter of an hour later (here: at once) continues it, and so on to its end.
    let mut runs = 1;
    loop {
        let run = f.invoke(scheduled.clone(), context(20_000)).await.unwrap();
        runs += 1;
        assert_ne!(run["due"], false, "a pass in progress is always due: {run}");
        assert_eq!(run["resumed"], true, "{run}");
        if run["completed"] == true {
            break;
        }
        assert!(runs < 20, "the pass never ended: {run}");
    }
    let last = store
        .get_document(snapwake_delete::LAST_PASS)
        .await
        .unwrap();
    assert!(last.is_some(), "the completed pass is recorded");
    // Within the hour of that pass's beginning, a run has nothing to do, and lists nothing.
    world.sim.control().reset_counters();
    let early = f.invoke(scheduled.clone(), context(20_000)).await.unwrap();
    assert_eq!(early, serde_json::json!({"due": false}));
    assert_eq!(world.agentkit_calls(), 0);
    // Without `every_min` (an operator's `snapwake sweep`, an old rule): a pass, now.
    let now = f
        .invoke(serde_json::json!({"action": "sweep"}), context(20_000))
        .await
        .unwrap();
    assert_eq!(
        (&now["completed"], &now["resumed"]),
        (&Value::from(true), &Value::from(false)),
        "{now}"
    );
}
