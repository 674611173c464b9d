//! The retention rule end to end: what a sweep keeps and prunes, and a second sweep deleting nothing.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn a_sweep_keeps_the_newest_three_and_a_second_deletes_nothing() {
    let (store, world, _) = deployed_shared("cleanup-retain", Duration::ZERO).await;
    let fleet = seed_fleet(&world, &["ann", "ben", "cat", "dan", "eve"], 4, 6);
    assert_eq!((fleet.len(), total_snapshots(&fleet)), (20, 120));
    let f = cleanup_fn(store.clone(), world.client(), SweepSettings::default());

    let started = std::time::Instant::now();
    let report = sweep(&f, Duration::from_secs(120)).await;
    eprintln!("first sweep: {:?} {report:?}", started.elapsed());
    assert!(report.completed && !report.resumed, "{report:?}");
    assert_eq!(report.counts.seen, 20, "{report:?}");
    assert_eq!(report.counts.indexed, 20, "{report:?}");
    assert_eq!(report.counts.pruned, 60, "{report:?}");
    assert_eq!((report.counts.skipped, report.counts.errors), (0, 0));
    assert_eq!(report.pass, report.counts, "one run is the whole pass");
    assert_eq!(received(&world, "DeleteSessionSnapshot"), 60);
    assert_newest_kept(&store, &world, &fleet, 3).await;
    // The records carry their owners now.
    for (agent_id, seeded) in &fleet {
        let record = store.get(&codex(agent_id)).await.unwrap().unwrap();
        assert_eq!(
            record.description.owner.as_deref(),
            Some(seeded.owner.as_str())
        );
        assert_eq!(
            record.description.tool_id.as_deref(),
            Some(world.recoverable.as_str())
        );
    }

    let report = sweep(&f, Duration::from_secs(120)).await;
    assert!(report.completed && !report.resumed, "{report:?}");
    assert_eq!(report.counts.pruned, 0, "{report:?}");
    assert_eq!(report.counts.seen, 20, "{report:?}");
    assert_eq!(
        report.counts.indexed, 0,
        "a second sweep writes no record: {report:?}"
    );
    assert_eq!(
        received(&world, "DeleteSessionSnapshot"),
        60,
        "no delete sent"
    );
    assert_newest_kept(&store, &world, &fleet, 3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn a_maximum_age_prunes_old_snapshots_but_never_an_asleep_agents_way_back() {
    let (store, world, ctl) = deployed_shared("cleanup-age", Duration::ZERO).await;
    let now = OffsetDateTime::now_utc();
    let days_ago = |d: u64| now - d as u32 * DAY;
    // Ages in days, newest first: the ids come back in that order.
    let seed = |owner: &str, ages: &[u64]| -> (String, Vec<String>) {
        let agent_id = caller::mint(owner);
        let ids = ctl
            .seed_snapshots(
                ages.iter()
                    .map(|d| snapshot_seed(&world.recoverable, owner, &agent_id, days_ago(*d)))
                    .collect(),
            )
            .unwrap();
        (agent_id, ids)
    };
    // Asleep, every snapshot past the age (and a Failed one older still): only the newest
    // Ready one stays.
    let (ancient, ancient_ids) = seed("alice", &[40, 41, 42, 43, 44, 45]);
    let ancient_failed = ctl
        .seed_snapshot(SeedSnapshot {
            status: Some("Failed".into()),
            ..snapshot_seed(&world.recoverable, "alice", &ancient, days_ago(50))
        })
        .unwrap();
    // Asleep, two recent ones and four old ones: the recent two stay.
    let (mixed, mixed_ids) = seed("alice", &[1, 2, 40, 41, 42, 43]);
    // Awake (a live session is its state now), every snapshot old: all of them go.
    let (awake, _) = seed("bob", &[40, 41, 42, 43]);
    let session = world.live_session("bob", &awake);
    // Young snapshots: the count rule alone.
    let (young, young_ids) = seed("bob", &[1, 2, 3, 4, 5]);
    // Asleep with a single old snapshot: it stays.
    let (single, single_ids) = seed("carol", &[90]);

    let f = cleanup_fn(
        store.clone(),
        world.client(),
        sweep_under(retention(3, Some(30 * DAY), None)),
    );
    let report = sweep(&f, Duration::from_secs(120)).await;
    assert!(report.completed, "{report:?}");
    assert_eq!((report.counts.skipped, report.counts.errors), (0, 0));

    let set = |ids: &[String]| ids.iter().cloned().collect::<BTreeSet<_>>();
    assert_eq!(held(&world, &ancient), set(&ancient_ids[..1]), "ancient");
    assert!(
        ctl.snapshot(&ancient_failed).is_none(),
        "the old Failed one goes"
    );
    assert_eq!(held(&world, &mixed), set(&mixed_ids[..2]), "mixed");
    assert_eq!(
        held(&world, &awake).len(),
        1,
        "the awake agent keeps its way back too"
    );
    assert!(ctl.session(&session).is_some(), "its session lives on");
    assert_eq!(ctl.counters().live_sessions_of(&awake), 1);
    assert_eq!(held(&world, &young), set(&young_ids[..3]), "young");
    assert_eq!(held(&world, &single), set(&single_ids), "single");
    // 5 + 1 (ancient), 4 (mixed), 3 (awake), 2 (young).
    assert_eq!(report.counts.pruned, 15, "{report:?}");
    assert_eq!(received(&world, "DeleteSessionSnapshot"), 15);

    // The asleep agents can still be woken from what they kept.
    let record = store.get(&codex(&ancient)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Asleep);
    assert_eq!(
        record
            .snapshots
            .iter()
            .map(|s| s.snapshot_id.clone())
            .collect::<Vec<_>>(),
        vec![ancient_ids[0].clone()]
    );

    let again = sweep(&f, Duration::from_secs(120)).await;
    assert_eq!(again.counts.pruned, 0, "{again:?}");
    assert_eq!(received(&world, "DeleteSessionSnapshot"), 15);
}
