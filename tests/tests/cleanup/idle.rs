//! `SNAPWAKE_AGENT_MAX_IDLE_DAYS`: an agent idle that long goes as a whole, exactly as
//! `DELETE /v1/agents/...` does (tombstone, every snapshot), never as a record left with
//! nothing to wake; an agent awake, or with a recent snapshot, stays.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_agent_is_deleted_whole_and_a_used_one_stays() {
    let (store, world, ctl) = deployed("sweep-idle", Duration::ZERO).await;
    let now = OffsetDateTime::now_utc();
    let ago = |days: u64| now - Duration::from_secs(days * 24 * 3600);
    let agent = |owner: &str, ages: &[u64]| {
        let id = caller::mint(owner);
        for age in ages {
            ctl.seed_snapshot(snapshot_seed(&world.recoverable, owner, &id, ago(*age)))
                .unwrap();
        }
        id
    };
    let idle = agent("alice", &[100, 200]);
    let recent = agent("alice", &[100, 10]);
    let awake = agent("bob", &[150]);
    world.live_session("bob", &awake);

    let f = cleanup_fn(
        store.clone(),
        world.client(),
        sweep_under(retention(3, None, Some(60 * DAY))),
    );
    let report = sweep(&f, Duration::from_secs(120)).await;
    assert_eq!(report.counts.idle_deleted, 1, "{report:?}");
    assert_eq!(report.counts.errors, 0, "{report:?}");
    assert!(world.snapshots_of(&idle).is_empty());
    let record = store.get(&codex(&idle)).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        WakeState::Gone,
        "a tombstone, as a delete leaves"
    );
    assert_eq!(world.snapshots_of(&recent).len(), 2);
    assert_eq!(world.snapshots_of(&awake).len(), 1);
    assert_eq!(ctl.counters().live_sessions_of(&awake), 1);

    let again = sweep(&f, Duration::from_secs(120)).await;
    assert_eq!(
        (again.counts.idle_deleted, again.counts.pruned),
        (0, 0),
        "{again:?}"
    );
}
