//! The AgentKit budget's items: every slot taken once, in order, spaced by the interval, by
//! many callers at once; a full bucket takes nothing; slowdowns are kept at most once a gap.

use snapwake::store::{BudgetStore, Reserved, Slowdown};

use crate::support::*;

const TAKERS: usize = 60;

/// A far-off `now` for each test's buckets: the slots are plain numbers to the store.
const T0: u64 = 1_000_000;

pub(crate) async fn budget_slots_are_taken_once_in_order<
    S: AgentStore + snapwake::store::ScheduleStore + BudgetStore + 'static,
>(
    store: Arc<S>,
) {
    // An idle bucket starts at now.
    assert_eq!(
        store
            .reserve("Resume#background", T0, 20, T0 + 10_000)
            .await
            .unwrap(),
        Reserved::At {
            at_ms: T0,
            slowdown: None
        }
    );
    // Many callers at once: each its own slot, together the next TAKERS slots exactly.
    let tasks: Vec<_> = (0..TAKERS)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .reserve("Resume#background", T0, 20, T0 + 100_000)
                    .await
            })
        })
        .collect();
    let mut slots = Vec::new();
    for task in tasks {
        match task.await.unwrap().unwrap() {
            Reserved::At { at_ms, .. } => slots.push(at_ms),
            full => panic!("a bucket with room answered {full:?}"),
        }
    }
    slots.sort_unstable();
    let want: Vec<u64> = (1..=TAKERS as u64).map(|i| T0 + 20 * i).collect();
    assert_eq!(slots, want, "every slot once, spaced by the interval");

    // Booked past the caller's latest: nothing is taken, and the first free slot is told.
    let next = T0 + 20 * (TAKERS as u64 + 1);
    assert_eq!(
        store
            .reserve("Resume#background", T0, 20, next - 1)
            .await
            .unwrap(),
        Reserved::Full {
            free_at_ms: next,
            slowdown: None
        }
    );
    assert_eq!(
        store
            .reserve("Resume#background", T0, 20, next)
            .await
            .unwrap(),
        Reserved::At {
            at_ms: next,
            slowdown: None
        }
    );
    // Another bucket is untouched; a bucket whose slots all lie in the past restarts at now.
    assert_eq!(
        store.reserve("Resume#people", T0, 100, T0).await.unwrap(),
        Reserved::At {
            at_ms: T0,
            slowdown: None
        }
    );
    let later = T0 + 60_000;
    assert_eq!(
        store
            .reserve("Resume#background", later, 20, later)
            .await
            .unwrap(),
        Reserved::At {
            at_ms: later,
            slowdown: None
        }
    );
}

pub(crate) async fn budget_slowdowns_are_kept_once_a_gap<
    S: AgentStore + snapwake::store::ScheduleStore + BudgetStore + 'static,
>(
    store: Arc<S>,
) {
    let first = Slowdown {
        factor_permille: 500,
        since_ms: T0,
    };
    store
        .slow_down("GetSession#people", first, 1000)
        .await
        .unwrap();
    // Within the gap: the first one stands.
    let soon = Slowdown {
        factor_permille: 250,
        since_ms: T0 + 400,
    };
    store
        .slow_down("GetSession#people", soon, 1000)
        .await
        .unwrap();
    let seen = store
        .reserve("GetSession#people", T0, 10, T0)
        .await
        .unwrap();
    assert_eq!(seen.slowdown(), Some(first));
    // Past it: the new one replaces it, and a slot carries it.
    let later = Slowdown {
        factor_permille: 250,
        since_ms: T0 + 1500,
    };
    store
        .slow_down("GetSession#people", later, 1000)
        .await
        .unwrap();
    let seen = store
        .reserve("GetSession#people", T0 + 1500, 10, T0 + 2000)
        .await
        .unwrap();
    assert_eq!(seen.slowdown(), Some(later));
    assert!(matches!(seen, Reserved::At { .. }));
}
