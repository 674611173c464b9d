//! The store contract: one suite of generic checks, run against both adapters of the store
//! port — `MemoryStore` and `DynamoStore` on DynamoDB Local (each test its own table, since
//! DynamoDB Local has no reset call).
//!
//! The DynamoDB variants need DynamoDB Local: `eval "$(scripts/start-dynamodb-local.sh)"`
//! (scripts/test.sh does it). Without `AWS_ENDPOINT_URL` they fail, so a run that forgot to
//! start it cannot pass by silently testing one adapter; `SNAPWAKE_SKIP_DYNAMODB=1` skips them
//! on purpose.

use std::collections::HashSet;
use std::sync::Arc;

use snapwake::domain::Description;
use snapwake::domain::{
    AgentKey, AgentRecord, Kind, KindTools, Retention, ToolRegistry, WakeState,
};
use snapwake::store::dynamo::{sdk_defaults, DynamoStore};
use snapwake::store::memory::MemoryStore;
use snapwake::store::table::create_table;
use snapwake::store::{AgentStore, Changes, Condition, StoreError};
use snapwake::timestamp::{now_ms, now_s};

// ---------------------------------------------------------------------------------------------
// Helpers

fn key(id: &str) -> AgentKey {
    AgentKey::new(Kind::Codex, id)
}

/// An acquire as `waking` by `holder`.
fn acquire(holder: &str) -> Changes {
    Changes {
        state: Some(WakeState::Waking),
        holder: Some(Some(holder.to_string())),
        bump_fence: true,
        lease_until_ms: Some(now_ms() + 60_000),
        ..Default::default()
    }
}

fn held(holder: &str, fence: u64) -> Condition {
    Condition::Held {
        holder: holder.to_string(),
        fence,
    }
}

fn described(owner_key: Option<&str>, created_at: Option<&str>) -> Changes {
    Changes {
        state: Some(WakeState::Asleep),
        describe: Some(Description {
            owner_key: owner_key.map(str::to_string),
            created_at: created_at.map(str::to_string),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The current record of a failed condition; panics on success or any other error.
#[track_caller]
fn conflict(result: Result<AgentRecord, StoreError>) -> Option<AgentRecord> {
    match result {
        Err(StoreError::ConditionFailed { current }) => current.map(|b| *b),
        other => panic!("expected ConditionFailed, got {other:?}"),
    }
}

async fn list_all<S: AgentStore>(store: &S, owner_key: &str, page: u32) -> Vec<AgentKey> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let p = store
            .query_owner(owner_key, page, cursor.as_deref())
            .await
            .unwrap();
        assert!(p.records.len() <= page as usize, "page larger than limit");
        assert!(
            !p.records.is_empty() || p.cursor.is_none(),
            "an empty page with a cursor"
        );
        out.extend(p.records.into_iter().map(|r| r.key));
        match p.cursor {
            Some(c) => cursor = Some(c),
            None => return out,
        }
    }
    panic!("pagination did not end");
}

// ---------------------------------------------------------------------------------------------
// The contract

async fn missing_reads_absent<S: AgentStore>(store: Arc<S>) {
    assert_eq!(store.get(&key("nobody")).await.unwrap(), None);
    let page = store.query_owner("studio-nobody", 10, None).await.unwrap();
    assert!(page.records.is_empty());
    assert_eq!(page.cursor, None);
    assert_eq!(store.get_registry().await.unwrap(), None);
}

async fn absent_acquire_creates_with_fence_1_version_1<S: AgentStore>(store: Arc<S>) {
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

async fn second_absent_acquire_fails_with_current<S: AgentStore>(store: Arc<S>) {
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

async fn version_cas<S: AgentStore>(store: Arc<S>) {
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

async fn held_fenced_write<S: AgentStore>(store: Arc<S>) {
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

async fn waking_with_complete_by_anyone<S: AgentStore>(store: Arc<S>) {
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

async fn some_none_removes_a_field<S: AgentStore>(store: Arc<S>) {
    let k = key("r1");
    let mut changes = acquire("h1");
    changes.session_id = Some(Some("s1".into()));
    changes.snapshot_id = Some(Some("snap1".into()));
    changes.error = Some(Some("boom".into()));
    changes.expires_at = Some(Some(now_s() + 3600));
    let a = store
        .update(&k, &Condition::Absent, &changes)
        .await
        .unwrap();
    assert_eq!(a.error.as_deref(), Some("boom"));
    let w = store
        .update(
            &k,
            &held("h1", 1),
            &Changes {
                state: Some(WakeState::Failed),
                holder: Some(None),
                error: Some(None),
                session_id: Some(None),
                expires_at: Some(None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(w.holder, None);
    assert_eq!(w.error, None);
    assert_eq!(w.session_id, None);
    assert_eq!(w.expires_at, None);
    // `None` leaves a field as it is.
    assert_eq!(w.snapshot_id.as_deref(), Some("snap1"));
    assert_eq!(w.lease_until_ms, a.lease_until_ms);
    assert_eq!(store.get(&k).await.unwrap(), Some(w));
}

/// The fields of a wake in flight (its session's expiry, its verification, an unknown Resume,
/// the poll lease) are written, kept by writes that do not name them, removed by `Some(None)`,
/// and gone from a record created afresh over an expired one.
async fn wake_fields_round_trip_and_clear_on_create<S: AgentStore>(store: Arc<S>) {
    let k = key("w1");
    let mut changes = acquire("h1");
    changes.resume_sent_at_ms = Some(Some(1_700_000_000_123));
    changes.poll_until_ms = Some(1_700_000_005_000);
    let a = store
        .update(&k, &Condition::Absent, &changes)
        .await
        .unwrap();
    assert_eq!(a.resume_sent_at_ms, Some(1_700_000_000_123));
    assert_eq!(a.poll_until_ms, 1_700_000_005_000);
    assert_eq!((a.verified_at_ms, a.session_expire_at.clone()), (0, None));
    let b = store
        .update(
            &k,
            &held("h1", 1),
            &Changes {
                session_id: Some(Some("s1".into())),
                session_expire_at: Some(Some("2026-12-02T18:00:00Z".into())),
                verified_at_ms: Some(1_700_000_001_000),
                resume_sent_at_ms: Some(None),
                expires_at: Some(Some(now_s() - 1)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(b.resume_sent_at_ms, None);
    assert_eq!(b.poll_until_ms, 1_700_000_005_000, "kept when not named");
    assert_eq!(b.session_expire_at.as_deref(), Some("2026-12-02T18:00:00Z"));
    assert_eq!(b.verified_at_ms, 1_700_000_001_000);
    // Expired now: a create starts from nothing but the counters.
    assert_eq!(store.get(&k).await.unwrap(), None);
    let c = store
        .update(&k, &Condition::Absent, &acquire("h2"))
        .await
        .unwrap();
    assert_eq!((c.fence, c.version), (b.fence + 1, b.version + 1));
    assert_eq!(c.session_id, None);
    assert_eq!(c.session_expire_at, None);
    assert_eq!((c.verified_at_ms, c.poll_until_ms), (0, 0));
    assert_eq!(c.resume_sent_at_ms, None);
    assert_eq!(store.get(&k).await.unwrap(), Some(c));
}

async fn expired_reads_absent_and_is_reacquired<S: AgentStore>(store: Arc<S>) {
    let k = key("e1");
    let mut changes = acquire("h1");
    changes.describe = Some(Description {
        owner_key: Some("studio-e".into()),
        display_name: Some("old".into()),
        created_at: Some("2026-01-01T00:00:00Z".into()),
        ..Default::default()
    });
    store
        .update(&k, &Condition::Absent, &changes)
        .await
        .unwrap();
    // A tombstone that has not expired yet is a record like any other.
    let gone = store
        .update(
            &k,
            &held("h1", 1),
            &Changes {
                state: Some(WakeState::Gone),
                session_id: Some(Some("s-old".into())),
                expires_at: Some(Some(now_s() + 3600)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(store.get(&k).await.unwrap(), Some(gone.clone()));
    assert_eq!(
        conflict(store.update(&k, &Condition::Absent, &acquire("h2")).await),
        Some(gone.clone())
    );
    // Now let it expire.
    let expired = store
        .update(
            &k,
            &held("h1", 1),
            &Changes {
                expires_at: Some(Some(now_s() - 10)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(expired.version, 3);
    assert_eq!(store.get(&k).await.unwrap(), None);
    assert!(store
        .query_owner("studio-e", 10, None)
        .await
        .unwrap()
        .records
        .is_empty());
    // Only a create may write to it; the others fail as on a missing record.
    for condition in [
        Condition::Version(3),
        held("h1", 1),
        Condition::WakingWith {
            fence: 1,
            session_id: "s-old".into(),
        },
    ] {
        assert_eq!(
            conflict(store.update(&k, &condition, &Changes::default()).await),
            None,
            "{condition:?}"
        );
    }
    let fresh = store
        .update(&k, &Condition::Absent, &acquire("h2"))
        .await
        .unwrap();
    // The counters carry on, so no holder or ETag of the old incarnation matches...
    assert_eq!((fresh.fence, fresh.version), (2, 4));
    // ...and nothing else survives.
    assert_eq!(fresh.holder.as_deref(), Some("h2"));
    assert_eq!(fresh.state, WakeState::Waking);
    assert_eq!(fresh.expires_at, None);
    assert_eq!(fresh.session_id, None);
    assert_eq!(fresh.description.owner_key, None);
    assert_eq!(fresh.description.display_name, None);
    assert_eq!(fresh.description.created_at, None);
    assert_eq!(store.get(&k).await.unwrap(), Some(fresh));
    assert!(store
        .query_owner("studio-e", 10, None)
        .await
        .unwrap()
        .records
        .is_empty());
}

async fn describe_fields_round_trip<S: AgentStore>(store: Arc<S>) {
    let k = AgentKey::new(Kind::Hermes, "d#1");
    let description = Description {
        owner: Some("alice@example.com".into()),
        owner_key: Some("studio-alice".into()),
        display_name: Some("Alice's hermes".into()),
        created_by: Some("alice".into()),
        retention: Some(Retention::Recoverable),
        tool_id: Some("t-123".into()),
        region: Some("cn-beijing".into()),
        created_at: Some("2026-02-03T04:05:06Z".into()),
    };
    let r = store
        .update(
            &k,
            &Condition::Absent,
            &Changes {
                state: Some(WakeState::Asleep),
                snapshot_id: Some(Some("snap".into())),
                describe: Some(description.clone()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let got = store.get(&k).await.unwrap().unwrap();
    assert_eq!(got, r);
    assert_eq!(got.key, k);
    assert_eq!(got.description.owner, description.owner);
    assert_eq!(got.description.owner_key, description.owner_key);
    assert_eq!(got.description.display_name, description.display_name);
    assert_eq!(got.description.created_by, description.created_by);
    assert_eq!(got.description.retention, description.retention);
    assert_eq!(got.description.tool_id, description.tool_id);
    assert_eq!(got.description.region, description.region);
    assert_eq!(got.description.created_at, description.created_at);
    assert_eq!(
        (got.state, got.fence, got.version),
        (WakeState::Asleep, 0, 1)
    );
    // A partial description overwrites only what it names.
    let renamed = store
        .update(
            &k,
            &Condition::Version(1),
            &Changes {
                describe: Some(Description {
                    display_name: Some("renamed".into()),
                    retention: Some(Retention::Temporary),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(renamed.description.display_name.as_deref(), Some("renamed"));
    assert_eq!(renamed.description.retention, Some(Retention::Temporary));
    assert_eq!(renamed.description.owner, description.owner);
    assert_eq!(renamed.description.created_at, description.created_at);
    assert_eq!(renamed.snapshot_id.as_deref(), Some("snap"));
    let page = store.query_owner("studio-alice", 10, None).await.unwrap();
    assert_eq!(page.records, vec![renamed]);
}

async fn owner_index_newest_first_with_pages<S: AgentStore>(store: Arc<S>) {
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

async fn owner_index_skips_expired_and_ownerless<S: AgentStore>(store: Arc<S>) {
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
async fn owner_index_pages_past_many_tombstones<S: AgentStore>(store: Arc<S>) {
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
    for i in 0..40u32 {
        let k = key(&format!("dead{i:02}"));
        let at = format!("2026-06-01T00:00:{i:02}Z");
        store
            .update(
                &k,
                &Condition::Absent,
                &described(Some("studio-t"), Some(&at)),
            )
            .await
            .unwrap();
        store
            .update(
                &k,
                &Condition::Version(1),
                &Changes {
                    state: Some(WakeState::Gone),
                    expires_at: Some(Some(now_s() - 1)),
                    ..Default::default()
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

async fn owner_index_rejects_foreign_cursors<S: AgentStore>(store: Arc<S>) {
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

async fn documents_cas_and_expiry<S: AgentStore>(store: Arc<S>) {
    use snapwake::store::DocumentKey;
    let key = DocumentKey {
        pk: "IDEM#alice#k1",
        sk: "IDEM",
    };
    let other = DocumentKey {
        pk: "IDEM#alice#k2",
        sk: "IDEM",
    };
    assert_eq!(store.get_document(key).await.unwrap(), None);
    let doc = serde_json::json!({"state": "running", "fingerprint": "abc"});
    let v1 = store
        .put_document(key, &doc, 0, Some(now_s() + 3600))
        .await
        .unwrap();
    assert_eq!(v1.version, 1);
    assert_eq!(store.get_document(key).await.unwrap(), Some(v1.clone()));
    assert_eq!(
        store.get_document(other).await.unwrap(),
        None,
        "keys are separate"
    );

    // A second create loses and sees the first.
    match store
        .put_document(key, &serde_json::json!({}), 0, None)
        .await
    {
        Err(StoreError::DocumentConflict { current }) => {
            assert_eq!(current.map(|b| *b), Some(v1.clone()))
        }
        other => panic!("expected DocumentConflict, got {other:?}"),
    }
    // CAS on the version; a stale version loses.
    let done = serde_json::json!({"state": "done"});
    let v2 = store.put_document(key, &done, 1, None).await.unwrap();
    assert_eq!((v2.version, v2.expires_at), (2, None));
    assert!(matches!(
        store.put_document(key, &doc, 1, None).await,
        Err(StoreError::DocumentConflict { current: Some(_) })
    ));

    // An expired document reads as absent and can be created anew; its version carries on.
    let lapsed = store
        .put_document(other, &doc, 0, Some(now_s() - 10))
        .await
        .unwrap();
    assert_eq!(store.get_document(other).await.unwrap(), None);
    match store.put_document(other, &doc, lapsed.version, None).await {
        Err(StoreError::DocumentConflict { current: None }) => {}
        other => panic!("an expired document cannot be CASed on: {other:?}"),
    }
    let again = store.put_document(other, &done, 0, None).await.unwrap();
    assert!(again.version > lapsed.version);
    assert_eq!(again.value, done);
}

async fn registry_cas<S: AgentStore>(store: Arc<S>) {
    let mut registry = ToolRegistry {
        region: Some("cn-beijing".into()),
        ..Default::default()
    };
    registry.kinds.insert(
        Kind::Codex,
        KindTools {
            temporary: Some("t-tmp".into()),
            recoverable: Some("t-rec".into()),
            legacy_snapshot_tools: vec!["t-old".into()],
        },
    );
    // Nothing stored: only 0 is the expected version.
    match store.put_registry(&registry, 1).await {
        Err(StoreError::RegistryConflict { current: None }) => {}
        other => panic!("expected RegistryConflict without current, got {other:?}"),
    }
    let v1 = store.put_registry(&registry, 0).await.unwrap();
    assert_eq!(v1.version, 1);
    assert_eq!(v1.kinds, registry.kinds);
    assert_eq!(store.get_registry().await.unwrap(), Some(v1.clone()));

    let mut next = v1.clone();
    next.kinds.insert(Kind::Hermes, KindTools::default());
    match store.put_registry(&next, 0).await {
        Err(StoreError::RegistryConflict { current }) => {
            assert_eq!(current.map(|b| *b), Some(v1.clone()))
        }
        other => panic!("expected RegistryConflict, got {other:?}"),
    }
    let v2 = store.put_registry(&next, 1).await.unwrap();
    assert_eq!(v2.version, 2);
    match store.put_registry(&registry, 1).await {
        Err(StoreError::RegistryConflict { current }) => {
            assert_eq!(current.map(|b| *b), Some(v2.clone()))
        }
        other => panic!("expected RegistryConflict, got {other:?}"),
    }
    assert_eq!(store.get_registry().await.unwrap(), Some(v2));
}

const RACERS: usize = 50;

/// Run `RACERS` writes of `condition` at once, each as its own holder; exactly one must win,
/// and every loser must learn the winner's record.
async fn race<S: AgentStore + 'static>(
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

async fn concurrent_absent_acquires_one_winner<S: AgentStore + 'static>(store: Arc<S>) {
    let winner = race(store, key("race-absent"), Condition::Absent).await;
    assert_eq!((winner.fence, winner.version), (1, 1));
}

async fn concurrent_version_acquires_one_winner<S: AgentStore + 'static>(store: Arc<S>) {
    let k = key("race-version");
    let first = store
        .update(&k, &Condition::Absent, &acquire("first"))
        .await
        .unwrap();
    let winner = race(store, k, Condition::Version(first.version)).await;
    assert_eq!((winner.fence, winner.version), (2, 2));
}

// ---------------------------------------------------------------------------------------------
// The two adapters

fn memory_store() -> Arc<MemoryStore> {
    Arc::new(MemoryStore::new())
}

/// A `DynamoStore` over a new table of its own, on DynamoDB Local.
async fn dynamo_store(test: &str) -> Option<Arc<DynamoStore>> {
    if std::env::var_os("AWS_ENDPOINT_URL").is_none() {
        if std::env::var("SNAPWAKE_SKIP_DYNAMODB").as_deref() == Ok("1") {
            eprintln!("SNAPWAKE_SKIP_DYNAMODB=1: skipping the DynamoDB variant of {test}");
            return None;
        }
        panic!(
            "AWS_ENDPOINT_URL is not set, so the DynamoDB variant of the store contract cannot \
             run. Start DynamoDB Local with `eval \"$(scripts/start-dynamodb-local.sh)\"` (or \
             run scripts/test.sh), or set SNAPWAKE_SKIP_DYNAMODB=1 to skip these tests on purpose."
        );
    }
    let table = format!(
        "contract-{}-{}",
        test.replace('_', "-"),
        uuid::Uuid::new_v4().simple()
    );
    let store = DynamoStore::from_env(&table).await;
    create_table(store.client(), &table)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "creating table {table} on {:?}: {e}",
                std::env::var("AWS_ENDPOINT_URL")
            )
        });
    Some(Arc::new(store))
}

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::memory_store()).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    if let Some(store) = super::dynamo_store(stringify!($name)).await {
                        super::$name(store).await;
                    }
                }
            )*
        }
    };
}

contract!(
    missing_reads_absent,
    absent_acquire_creates_with_fence_1_version_1,
    second_absent_acquire_fails_with_current,
    version_cas,
    held_fenced_write,
    waking_with_complete_by_anyone,
    some_none_removes_a_field,
    wake_fields_round_trip_and_clear_on_create,
    expired_reads_absent_and_is_reacquired,
    describe_fields_round_trip,
    owner_index_newest_first_with_pages,
    owner_index_skips_expired_and_ownerless,
    owner_index_pages_past_many_tombstones,
    owner_index_rejects_foreign_cursors,
    registry_cas,
    documents_cas_and_expiry,
    concurrent_absent_acquires_one_winner,
    concurrent_version_acquires_one_winner,
);

// ---------------------------------------------------------------------------------------------
// DynamoDB only: failures that are not a condition

/// A store that cannot be reached answers `Unavailable`, never a verdict on the condition.
#[tokio::test]
async fn dynamodb_unreachable_is_unavailable() {
    let config = sdk_defaults()
        .endpoint_url("http://127.0.0.1:9")
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "test",
        ))
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .load()
        .await;
    let store = DynamoStore::from_conf(&config, "nowhere");
    assert!(matches!(
        store.get(&key("x")).await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store
            .update(&key("x"), &Condition::Absent, &acquire("h"))
            .await,
        Err(StoreError::Unavailable(_))
    ));
}

/// A missing table (a misconfigured `SNAPWAKE_TABLE`) is `Unavailable` too.
#[tokio::test]
async fn dynamodb_missing_table_is_unavailable() {
    let Some(store) = dynamo_store("missing_table").await else {
        return;
    };
    let other = DynamoStore::new(store.client().clone(), "no-such-table");
    assert!(matches!(
        other.get(&key("x")).await,
        Err(StoreError::Unavailable(_))
    ));
}

/// `create_table` is idempotent.
#[tokio::test]
async fn dynamodb_create_table_twice() {
    let Some(store) = dynamo_store("create_twice").await else {
        return;
    };
    create_table(store.client(), store.table()).await.unwrap();
    assert_eq!(store.get(&key("x")).await.unwrap(), None);
}
