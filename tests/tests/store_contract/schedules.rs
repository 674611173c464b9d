//! Schedule items and the sparse `by_due` index: the same answers from both adapters.

use snapwake::domain::{Action, Attempt, Occurrence, ScheduleRecord};
use snapwake::store::{DueCursor, DueQuery, ScheduleStore};

use crate::support::*;

fn schedule(id: &str, wake: Option<u64>, sleep: Option<u64>) -> ScheduleRecord {
    ScheduleRecord {
        key: Some(key(id)),
        timezone: "Europe/Berlin".into(),
        wake: wake.map(|_| "30 8 * * MON-FRI".into()),
        sleep: sleep.map(|_| "0 19 * * MON-FRI".into()),
        next_wake_ms: wake,
        next_sleep_ms: sleep,
        ..ScheduleRecord::default()
    }
}

/// Versions are the store's, a stale write fails with the stored schedule, a schedule reads
/// back as written (its agent from the key), and a delete removes it (twice is fine).
pub(crate) async fn schedules_cas_round_trip_and_delete<S: AgentStore + ScheduleStore>(
    store: Arc<S>,
) {
    assert!(store.get_schedule(&key("a")).await.unwrap().is_none());
    let mut s = schedule("a", Some(1_000), Some(2_000));
    s.open = Some(Occurrence {
        action: Action::Wake,
        at_ms: 1_000,
        attempt: Attempt::InFlight,
        seen_version: 7,
        seen_rest: Some(11),
        started_ms: None,
        follow_up_ms: None,
    });
    let first = store.put_schedule(&s, 0).await.unwrap();
    assert_eq!(first.version, 1);
    assert_eq!(first.key, Some(key("a")));
    assert_eq!(first.open, s.open);
    assert!(first.updated_at.is_some());
    match store.put_schedule(&s, 0).await {
        Err(StoreError::ScheduleConflict { current: Some(c) }) => assert_eq!(c.version, 1),
        other => panic!("expected a conflict carrying version 1, got {other:?}"),
    }
    let second = store.put_schedule(&s, 1).await.unwrap();
    assert_eq!(second.version, 2);
    let read = store.get_schedule(&key("a")).await.unwrap().unwrap();
    assert_eq!(read, second);
    // Schedule items are not agent records: the admin's scan of everyone does not see them.
    let page = store.scan_agents(None, 10, None).await.unwrap();
    assert!(page.records.is_empty(), "{page:?}");
    store.delete_schedule(&key("a")).await.unwrap();
    store.delete_schedule(&key("a")).await.unwrap();
    assert!(store.get_schedule(&key("a")).await.unwrap().is_none());
}

/// The due index: only schedules due by the time asked, earliest first, paged without gaps
/// or repeats; a schedule with nothing due is not in it; an open occurrence is due at once.
pub(crate) async fn due_index_reads_only_the_due_in_order<S: AgentStore + ScheduleStore>(
    store: Arc<S>,
) {
    for i in 0..12u64 {
        let id = format!("due-{i:02}");
        store
            .put_schedule(&schedule(&id, Some(10_000 + i * 100), Some(50_000)), 0)
            .await
            .unwrap();
    }
    store
        .put_schedule(&schedule("never", None, None), 0)
        .await
        .unwrap();
    let mut open = schedule("carried", Some(90_000), None);
    open.open = Some(Occurrence {
        action: Action::Wake,
        at_ms: 9_000,
        attempt: Attempt::Retry,
        seen_version: 0,
        seen_rest: None,
        started_ms: None,
        follow_up_ms: None,
    });
    store.put_schedule(&open, 0).await.unwrap();

    // Everything due by 10,500: "carried" (9,000) and due-00..05.
    let mut seen = Vec::new();
    let mut after: Option<DueCursor> = None;
    loop {
        let page = store
            .due_schedules(DueQuery {
                until_ms: 10_500,
                limit: 2,
                after: after.as_ref(),
            })
            .await
            .unwrap();
        seen.extend(page.records.iter().map(|r| r.key.clone().unwrap().agent_id));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    let want: Vec<String> = std::iter::once("carried".to_string())
        .chain((0..6).map(|i| format!("due-{i:02}")))
        .collect();
    assert_eq!(seen, want);
    assert!(store
        .due_schedules(DueQuery::until(8_999, 10))
        .await
        .unwrap()
        .records
        .is_empty());
    let all = store
        .due_schedules(DueQuery::until(u64::MAX / 2, 100))
        .await
        .unwrap();
    assert_eq!(
        all.records.len(),
        13,
        "every schedule with something due, none without"
    );

    // Taking the due time away takes it out of the index.
    let current = store.get_schedule(&key("due-00")).await.unwrap().unwrap();
    let mut done = current.clone();
    done.next_wake_ms = None;
    done.next_sleep_ms = None;
    store.put_schedule(&done, current.version).await.unwrap();
    let all = store
        .due_schedules(DueQuery::until(u64::MAX / 2, 100))
        .await
        .unwrap();
    assert_eq!(all.records.len(), 12);
}

/// Awake agents with an idle time are in the index's idle partition, earliest first, paged; a
/// write that leaves the agent asleep takes it out; the schedules' partition never shows them.
pub async fn idle_index_reads_the_awake_agents_by_their_idle_time<S: AgentStore + ScheduleStore>(
    store: Arc<S>,
) {
    for i in 0..5u64 {
        let changes = Changes {
            state: Some(WakeState::Awake),
            idle_at_ms: Some(Some(20_000 + i * 1_000)),
            ..Changes::default()
        };
        store
            .update(&key(&format!("idle-{i}")), &Condition::Absent, &changes)
            .await
            .unwrap();
    }
    let never = Changes {
        state: Some(WakeState::Awake),
        idle_minutes: Some(Some(0)),
        ..Changes::default()
    };
    store
        .update(&key("never"), &Condition::Absent, &never)
        .await
        .unwrap();

    // Five idle by 24,000, three by 22,500: a page of two, then the last one.
    let by = |after| DueQuery {
        until_ms: 22_500,
        limit: 2,
        after,
    };
    let first = store.idle_agents(by(None)).await.unwrap();
    let rest = store.idle_agents(by(first.next.as_ref())).await.unwrap();
    assert!(first.next.is_some() && rest.next.is_none(), "{rest:?}");
    let seen: Vec<(String, Option<u64>)> = [first.records, rest.records]
        .concat()
        .into_iter()
        .map(|r| (r.key.agent_id, r.idle_at_ms))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("idle-0".to_string(), Some(20_000)),
            ("idle-1".to_string(), Some(21_000)),
            ("idle-2".to_string(), Some(22_000)),
        ]
    );
    let never = store.get(&key("never")).await.unwrap().unwrap();
    assert_eq!((never.idle_minutes, never.idle_at_ms), (Some(0), None));
    assert!(
        store
            .due_schedules(DueQuery::until(u64::MAX / 2, 100))
            .await
            .unwrap()
            .records
            .is_empty(),
        "the schedules' partition holds no agent"
    );

    // What a write of `changes` to `id` (at its version) leaves of its idle time.
    let after = |id: &'static str, changes: Changes| {
        let store = store.clone();
        async move {
            let r = store.get(&key(id)).await.unwrap().unwrap();
            let condition = Condition::Version(r.version);
            let written = store.update(&r.key, &condition, &changes).await.unwrap();
            written.idle_at_ms
        }
    };
    let state = |s: WakeState| Changes {
        state: Some(s),
        ..Changes::default()
    };
    // Asleep, it is out of the index, though the write did not name the idle time.
    assert_eq!(after("idle-0", state(WakeState::Asleep)).await, None);
    let left = store
        .idle_agents(DueQuery::until(u64::MAX / 2, 100))
        .await
        .unwrap();
    assert_eq!(left.records.len(), 4, "{left:?}");
    // A write that neither says nor changes the state keeps it.
    let verified = Changes {
        verified_at_ms: Some(5),
        ..Changes::default()
    };
    assert_eq!(after("idle-1", verified).await, Some(21_000));
    // A change in flight keeps it too: it may give the agent back awake (a snapshot's delete).
    assert_eq!(
        after("idle-2", state(WakeState::Deleting)).await,
        Some(22_000)
    );
}
