//! Races: many writers of one condition at once, exactly one winner, every loser told the
//! winner's record.

use crate::support::*;

pub(crate) const RACERS: usize = 50;

/// Run `RACERS` writes of `condition` at once, each as its own holder; exactly one must win,
/// and every loser must learn the winner's record.
pub(crate) async fn race<S: AgentStore + snapwake::store::ScheduleStore + 'static>(
    store: Arc<S>,
    k: AgentKey,
    condition: Condition,
) -> AgentRecord {
    let tasks: Vec<_> = (0..RACERS)
        .map(|i| {
            let store = store.clone();
            let k = k.clone();
            let condition = condition.clone();
            tokio::spawn(async move {
                store
                    .update(&k, &condition, &acquire(&format!("racer-{i}")))
                    .await
            })
        })
        .collect();
    let mut winners = Vec::new();
    let mut seen = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Ok(r) => winners.push(r),
            Err(StoreError::ConditionFailed { current }) => {
                seen.push(current.expect("a loser sees the winner's record"))
            }
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one winner");
    let winner = winners.remove(0);
    assert_eq!(seen.len(), RACERS - 1);
    for current in seen {
        assert_eq!(current.holder, winner.holder);
        assert_eq!(current.fence, winner.fence);
    }
    assert_eq!(store.get(&k).await.unwrap(), Some(winner.clone()));
    winner
}

pub(crate) async fn concurrent_absent_acquires_one_winner<
    S: AgentStore + snapwake::store::ScheduleStore + 'static,
>(
    store: Arc<S>,
) {
    let winner = race(store, key("race-absent"), Condition::Absent).await;
    assert_eq!((winner.fence, winner.version), (1, 1));
}

pub(crate) async fn concurrent_version_acquires_one_winner<
    S: AgentStore + snapwake::store::ScheduleStore + 'static,
>(
    store: Arc<S>,
) {
    let k = key("race-version");
    let first = store
        .update(&k, &Condition::Absent, &acquire("first"))
        .await
        .unwrap();
    let winner = race(store, k, Condition::Version(first.version)).await;
    assert_eq!((winner.fence, winner.version), (2, 2));
}
