//! The contract's conditions: a missing record reads absent, an absent acquire creates it with
//! fence 1 and version 1 (a second one fails with the current record), version CAS, held and
//! fenced writes, and `complete` by anyone of a waking record.

use crate::support::*;

// ---------------------------------------------------------------------------------------------
// The contract

pub(crate) async fn missing_reads_absent<S: AgentStore + snapwake::store::ScheduleStore>(
    store: Arc<S>,
) {
    assert_eq!(store.get(&key("nobody")).await.unwrap(), None);
    let page = store.query_owner("studio-nobody", 10, None).await.unwrap();
    assert!(page.records.is_empty());
    assert_eq!(page.cursor, None);
    assert_eq!(store.get_registry().await.unwrap(), None);
}

pub(crate) async fn absent_acquire_creates_with_fence_1_version_1<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
    let k = key("a1");
    let r = store
        .update(&k, &Condition::Absent, &acquire("h1"))
        .await
        .unwrap();
    assert_eq!(r.key, k);
    assert_eq!(r.state, WakeState::Waking);
    assert_eq!(r.holder.as_deref(), Some("h1"));
    assert_eq!((r.fence, r.version), (1, 1));
    assert!(r.lease_until_ms > now_ms());
    assert!(r.updated_at.is_some());
    assert_eq!(r.expires_at, None);
    assert_eq!(store.get(&k).await.unwrap(), Some(r));
}

pub(crate) async fn second_absent_acquire_fails_with_current<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
    let k = key("a2");
    let first = store
        .update(&k, &Condition::Absent, &acquire("h1"))
        .await
        .unwrap();
    let current = conflict(store.update(&k, &Condition::Absent, &acquire("h2")).await);
    assert_eq!(current.as_ref(), Some(&first));
    // Version(0) is what an absent record reads as: the same condition.
    let current = conflict(
        store
            .update(&k, &Condition::Version(0), &acquire("h2"))
            .await,
    );
    assert_eq!(current, Some(first.clone()));
    assert_eq!(store.get(&k).await.unwrap(), Some(first));
}

pub(crate) async fn version_cas<S: AgentStore + snapwake::store::ScheduleStore>(store: Arc<S>) {
    let k = key("v1");
    // A version on a missing record fails with nothing current.
    assert_eq!(
        conflict(
            store
                .update(&k, &Condition::Version(3), &acquire("h1"))
                .await
        ),
        None
    );
    // Version(0) creates, like Absent.
    let v1 = store
        .update(&k, &Condition::Version(0), &acquire("h1"))
        .await
        .unwrap();
    assert_eq!((v1.fence, v1.version), (1, 1));
    let v2 = store
        .update(&k, &Condition::Version(1), &acquire("h2"))
        .await
        .unwrap();
    assert_eq!((v2.fence, v2.version), (2, 2));
    assert_eq!(v2.holder.as_deref(), Some("h2"));
    // A stale version loses and learns the winner's record.
    let current = conflict(
        store
            .update(&k, &Condition::Version(1), &acquire("h3"))
            .await,
    );
    assert_eq!(current, Some(v2.clone()));
    // A write without bump_fence leaves the fence alone.
    let v3 = store
        .update(
            &k,
            &Condition::Version(2),
            &Changes {
                state: Some(WakeState::Asleep),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((v3.fence, v3.version, v3.state), (2, 3, WakeState::Asleep));
    assert_eq!(v3.holder.as_deref(), Some("h2"));
}

pub(crate) async fn held_fenced_write<S: AgentStore + snapwake::store::ScheduleStore>(
    store: Arc<S>,
) {
    let k = key("h1");
    assert_eq!(
        conflict(store.update(&k, &held("h1", 1), &Changes::default()).await),
        None,
        "a fenced write to a missing record"
    );
    let a = store
        .update(&k, &Condition::Absent, &acquire("h1"))
        .await
        .unwrap();
    let record_session = Changes {
        session_id: Some(Some("s1".into())),
        lease_until_ms: Some(now_ms() + 360_000),
        ..Default::default()
    };
    let w = store
        .update(&k, &held("h1", 1), &record_session)
        .await
        .unwrap();
    assert_eq!(w.session_id.as_deref(), Some("s1"));
    assert_eq!((w.fence, w.version), (1, 2));
    assert_eq!(w.holder, a.holder);
    // Another holder, or the holder with a wrong fence, fails and sees the record.
    assert_eq!(
        conflict(store.update(&k, &held("h2", 1), &record_session).await),
        Some(w.clone())
    );
    assert_eq!(
        conflict(store.update(&k, &held("h1", 2), &record_session).await),
        Some(w.clone())
    );
    // The same token acquiring again: its first tenure's fence is now stale.
    let again = store
        .update(&k, &Condition::Version(w.version), &acquire("h1"))
        .await
        .unwrap();
    assert_eq!(again.fence, 2);
    assert_eq!(
        conflict(store.update(&k, &held("h1", 1), &record_session).await),
        Some(again.clone())
    );
    let done = store
        .update(&k, &held("h1", 2), &record_session)
        .await
        .unwrap();
    assert_eq!(done.version, again.version + 1);
}

pub(crate) async fn waking_with_complete_by_anyone<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
    let k = key("w1");
    let complete = Changes {
        state: Some(WakeState::Awake),
        holder: Some(None),
        ..Default::default()
    };
    let with = |fence: u64, session: &str| Condition::WakingWith {
        fence,
        session_id: session.to_string(),
    };
    assert_eq!(
        conflict(store.update(&k, &with(1, "s1"), &complete).await),
        None
    );
    let a = store
        .update(&k, &Condition::Absent, &acquire("h1"))
        .await
        .unwrap();
    // No session recorded yet.
    assert_eq!(
        conflict(store.update(&k, &with(1, "s1"), &complete).await),
        Some(a)
    );
    let w = store
        .update(
            &k,
            &held("h1", 1),
            &Changes {
                session_id: Some(Some("s1".into())),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        conflict(store.update(&k, &with(2, "s1"), &complete).await),
        Some(w.clone()),
        "wrong fence"
    );
    assert_eq!(
        conflict(store.update(&k, &with(1, "s2"), &complete).await),
        Some(w.clone()),
        "wrong session"
    );
    let awake = store.update(&k, &with(1, "s1"), &complete).await.unwrap();
    assert_eq!(awake.state, WakeState::Awake);
    assert_eq!(awake.holder, None);
    assert_eq!((awake.fence, awake.version), (1, 3));
    // Not waking any more: a second completer fails.
    assert_eq!(
        conflict(store.update(&k, &with(1, "s1"), &complete).await),
        Some(awake)
    );
}
