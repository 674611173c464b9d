//! The owner index: an owner's agents newest first in pages, expired and ownerless records
//! skipped, pages past many tombstones, and foreign cursors refused.

use crate::support::*;

pub(crate) async fn owner_index_newest_first_with_pages<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
    let kinds = [Kind::Codex, Kind::Openclaw, Kind::Hermes];
    let mut expected = Vec::new();
    for i in 0..7u32 {
        let k = AgentKey::new(kinds[i as usize % 3], format!("a{i}"));
        let at = format!("2026-01-01T00:00:{i:02}Z");
        store
            .update(
                &k,
                &Condition::Absent,
                &described(Some("studio-a"), Some(&at)),
            )
            .await
            .unwrap();
        expected.push(k);
    }
    // Same created_at twice: the order is still total (by kind, then id).
    for id in ["t1", "t2"] {
        let k = key(id);
        store
            .update(
                &k,
                &Condition::Absent,
                &described(Some("studio-a"), Some("2026-01-01T00:00:03Z")),
            )
            .await
            .unwrap();
    }
    // No created_at: indexed, and listed last.
    let undated = key("undated");
    store
        .update(
            &undated,
            &Condition::Absent,
            &described(Some("studio-a"), None),
        )
        .await
        .unwrap();
    for i in 0..2u32 {
        store
            .update(
                &key(&format!("b{i}")),
                &Condition::Absent,
                &described(Some("studio-b"), Some("2026-03-01T00:00:00Z")),
            )
            .await
            .unwrap();
    }

    let all = list_all(&*store, "studio-a", 100).await;
    assert_eq!(all.len(), 10);
    let distinct: HashSet<_> = all.iter().collect();
    assert_eq!(distinct.len(), 10);
    assert_eq!(all[0], expected[6], "newest first");
    assert_eq!(all[9], undated, "undated last");
    let newest_first: Vec<_> = all
        .iter()
        .filter(|k| k.agent_id.starts_with('a'))
        .cloned()
        .collect();
    let mut reversed = expected.clone();
    reversed.reverse();
    assert_eq!(newest_first, reversed);
    // Ties on created_at (codex/a3, codex/t1, codex/t2): the sort key then orders by kind and
    // id, descending.
    let pos = |id: &str| all.iter().position(|k| k.agent_id == id).unwrap();
    assert!(pos("a4") < pos("t2") && pos("t2") < pos("t1") && pos("t1") < pos("a3"));

    // Every page size pages through the same list, without duplicates or gaps.
    for page in [1, 3, 4, 9, 10, 11] {
        assert_eq!(
            list_all(&*store, "studio-a", page).await,
            all,
            "page {page}"
        );
    }
    // A page that ends exactly at the last record has no cursor.
    let exact = store.query_owner("studio-a", 10, None).await.unwrap();
    assert_eq!(exact.records.len(), 10);
    assert_eq!(exact.cursor, None);

    let b = list_all(&*store, "studio-b", 10).await;
    assert_eq!(b, vec![key("b1"), key("b0")]);
}

pub(crate) async fn owner_index_skips_expired_and_ownerless<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
    for (i, id) in ["x0", "x1", "x2", "x3"].iter().enumerate() {
        let at = format!("2026-01-0{}T00:00:00Z", i + 1);
        store
            .update(
                &key(id),
                &Condition::Absent,
                &described(Some("studio-x"), Some(&at)),
            )
            .await
            .unwrap();
    }
    // x2 and x3 become expired tombstones (still in the index, as TTL deletes lazily).
    for (id, version) in [("x2", 1), ("x3", 1)] {
        store
            .update(
                &key(id),
                &Condition::Version(version),
                &Changes {
                    state: Some(WakeState::Gone),
                    expires_at: Some(Some(now_s() - 5)),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
    }
    // An ownerless agent is not indexed.
    store
        .update(
            &key("lonely"),
            &Condition::Absent,
            &described(None, Some("2026-05-01T00:00:00Z")),
        )
        .await
        .unwrap();
    for page in [1, 2, 5] {
        assert_eq!(
            list_all(&*store, "studio-x", page).await,
            vec![key("x1"), key("x0")],
            "page {page}"
        );
    }
    // Expired records at the head of the index do not make a short page.
    let first = store.query_owner("studio-x", 2, None).await.unwrap();
    assert_eq!(first.records.len(), 2);
    assert_eq!(first.cursor, None);

    // An owner key added later to an existing record places it by its created_at.
    let late = key("late");
    store
        .update(
            &late,
            &Condition::Absent,
            &described(None, Some("2026-01-01T12:00:00Z")),
        )
        .await
        .unwrap();
    assert_eq!(list_all(&*store, "studio-x", 10).await.len(), 2);
    store
        .update(
            &late,
            &Condition::Version(1),
            &Changes {
                describe: Some(Description {
                    owner_key: Some("studio-x".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        list_all(&*store, "studio-x", 1).await,
        vec![key("x1"), late, key("x0")]
    );
}

/// More tombstones than one query round reads, newer than every live record: the listing
/// must go on past them (DynamoDB: `LastEvaluatedKey` continuation inside one page).
pub(crate) async fn owner_index_pages_past_many_tombstones<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
    for i in 0..3u32 {
        let at = format!("2026-01-01T00:00:{i:02}Z");
        store
            .update(
                &key(&format!("live{i}")),
                &Condition::Absent,
                &described(Some("studio-t"), Some(&at)),
            )
            .await
            .unwrap();
    }
    // Each tombstone in one create: a create the SDK sends again after a lost answer (a slow
    // DynamoDB Local under CI's load) finds an expired record, which reads as absent, so the
    // resend succeeds too. Two writes (create, then Version(1) → Gone) failed that way once:
    // the resend of the second saw its own tombstone.
    for i in 0..40u32 {
        let k = key(&format!("dead{i:02}"));
        let at = format!("2026-06-01T00:00:{i:02}Z");
        store
            .update(
                &k,
                &Condition::Absent,
                &Changes {
                    state: Some(WakeState::Gone),
                    expires_at: Some(Some(now_s() - 1)),
                    ..described(Some("studio-t"), Some(&at))
                },
            )
            .await
            .unwrap();
    }
    let expected = vec![key("live2"), key("live1"), key("live0")];
    for page in [1, 2, 3, 50] {
        assert_eq!(
            list_all(&*store, "studio-t", page).await,
            expected,
            "page {page}"
        );
    }
    let first = store.query_owner("studio-t", 2, None).await.unwrap();
    assert_eq!(first.records.len(), 2);
    assert!(first.cursor.is_some());
}

pub(crate) async fn owner_index_rejects_foreign_cursors<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
    for id in ["c0", "c1"] {
        store
            .update(
                &key(id),
                &Condition::Absent,
                &described(Some("studio-c"), Some("2026-01-01T00:00:00Z")),
            )
            .await
            .unwrap();
    }
    for bad in ["garbage", "", "eyJ4IjoxfQ"] {
        assert!(
            matches!(
                store.query_owner("studio-c", 1, Some(bad)).await,
                Err(StoreError::InvalidCursor(_))
            ),
            "{bad:?}"
        );
    }
    let page = store.query_owner("studio-c", 1, None).await.unwrap();
    let cursor = page.cursor.expect("a cursor");
    assert!(matches!(
        store.query_owner("studio-other", 1, Some(&cursor)).await,
        Err(StoreError::InvalidCursor(_))
    ));
    let next = store
        .query_owner("studio-c", 1, Some(&cursor))
        .await
        .unwrap();
    assert_eq!(next.records.len(), 1);
    assert_ne!(next.records[0].key, page.records[0].key);
}
