//! The tool write throttle: the limiter keeps concurrent writes within it, and a 429 from
//! AgentKit waits and retries in a fresh slot.

use super::*;

#[tokio::test]
async fn the_limiter_keeps_concurrent_writes_within_the_throttle() {
    let sim = sim(Duration::ZERO).await;
    let ctl = sim.control();
    let tool = ctl
        .seed_tool(
            REGION,
            SeedTool {
                name: "target".into(),
                tool_type: "CodeEnv".into(),
                ..SeedTool::default()
            },
        )
        .unwrap();
    let writer = Arc::new(client(&sim.endpoint()).with_retry_policy(no_retry_policy()));
    let update = UpdateTool {
        tool_id: tool.clone(),
        enable_snapshot: Some(true),
        envs: None,
    };

    // Without the limiter, the simulator's throttle does catch a burst.
    let burst: Vec<_> = (0..6)
        .map(|_| {
            let (w, u) = (writer.clone(), update.clone());
            tokio::spawn(async move {
                w.call(REGION, &u, Deadline::after(Duration::from_secs(5)))
                    .await
            })
        })
        .collect();
    for t in burst {
        let _ = t.await.unwrap();
    }
    assert!(ctl.counters().throttled > 0, "the throttle is live");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ctl.reset_counters();

    // Through the limiter: 10 concurrent writes, none throttled, ≤ 3 in any second.
    let limiter = Arc::new(WriteLimiter::default());
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (w, u, l) = (writer.clone(), update.clone(), limiter.clone());
            tokio::spawn(async move {
                l.write(&*w, REGION, &u, Deadline::after(Duration::from_secs(30)))
                    .await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let c = ctl.counters();
    assert_eq!(c.succeeded("UpdateTool"), 10);
    assert_eq!(c.throttled, 0);
    assert!(c.max_tool_writes_per_second <= 3, "{c:?}");
    assert_eq!(limiter.writes(), 10);
    assert_eq!(limiter.throttles(), 0);
}

#[tokio::test]
async fn a_429_from_agentkit_waits_and_retries_in_a_fresh_slot() {
    let sim = sim(Duration::ZERO).await;
    let ctl = sim.control();
    // Someone else's writes exhaust the quota: the next two CreateTool calls answer 429.
    let mut fault = snapwake_sim::Fault::error(Some("CreateTool"), "Throttling", 429);
    if let Some(e) = fault.error.as_mut() {
        e.retry_after = Some(1);
    }
    fault.trigger = snapwake_sim::Trigger::Next(2);
    ctl.inject(fault).unwrap();
    let store = dynamo_store("deploy_429").await;
    let cat = catalogue(&[]);
    let f = deploy_fn(store, &sim.endpoint(), cat.clone());
    let report = run(&f, apply(), Duration::from_secs(60)).await;
    assert_eq!(report.count(EntryStatus::Created), 7, "{report:#?}");
    assert_eq!(report.throttles, 2);
    assert_eq!(report.writes, 7);
    let c = ctl.counters();
    assert_eq!(c.received("CreateTool"), 9);
    assert!(c.max_tool_writes_per_second <= 3, "{c:?}");
    assert_one_tool_per_name(&sim.endpoint(), &cat).await;
}
