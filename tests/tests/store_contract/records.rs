//! What a record holds through writes: `Some(None)` removes a field, the wake fields round trip
//! and are cleared on create, an expired record reads absent and is acquired again, and the
//! describe fields round trip.

use crate::support::*;

pub(crate) async fn some_none_removes_a_field<S: AgentStore + snapwake::store::ScheduleStore>(
    store: Arc<S>,
) {
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
pub(crate) async fn wake_fields_round_trip_and_clear_on_create<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
    let k = key("w1");
    let mut changes = acquire("h1");
    changes.resume_sent_at_ms = Some(Some(1_700_000_000_123));
    changes.poll_until_ms = Some(1_700_000_005_000);
    changes.poller = Some(Some("p1".into()));
    changes.awaited_since_ms = Some(1_700_000_000_200);
    changes.create_sent_at_ms = Some(Some(1_700_000_000_100));
    let a = store
        .update(&k, &Condition::Absent, &changes)
        .await
        .unwrap();
    assert_eq!(a.resume_sent_at_ms, Some(1_700_000_000_123));
    assert_eq!(a.poll_until_ms, 1_700_000_005_000);
    assert_eq!(a.poller.as_deref(), Some("p1"));
    assert_eq!(a.awaited_since_ms, 1_700_000_000_200);
    assert_eq!(a.create_sent_at_ms, Some(1_700_000_000_100));
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
    assert_eq!(b.poller.as_deref(), Some("p1"), "kept when not named");
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
    // Nothing of the expired record's wake in flight carries over: an old create or
    // awaited time would mislead the create's and the pace's clocks.
    assert_eq!((c.poller.clone(), c.create_sent_at_ms), (None, None));
    assert_eq!(c.awaited_since_ms, 0);
    assert_eq!(store.get(&k).await.unwrap(), Some(c));
}

pub(crate) async fn expired_reads_absent_and_is_reacquired<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
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

pub(crate) async fn describe_fields_round_trip<S: AgentStore + snapwake::store::ScheduleStore>(
    store: Arc<S>,
) {
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

/// `get_many` reads exactly the live records among the keys it is given: a missing key and an
/// expired record are left out, and more keys than one `BatchGetItem` takes (100) are all read.
pub(crate) async fn get_many_reads_the_live_records_asked_for<
    S: AgentStore + snapwake::store::ScheduleStore,
>(
    store: Arc<S>,
) {
    let mut keys = Vec::new();
    let mut live = Vec::new();
    for i in 0..130 {
        let k = key(&format!("many-{i:03}"));
        keys.push(k.clone());
        if i % 3 == 0 {
            continue; // never written
        }
        let r = store
            .update(&k, &Condition::Absent, &acquire("h1"))
            .await
            .unwrap();
        if i % 10 == 1 {
            let expired = Changes {
                expires_at: Some(Some(now_s() - 10)),
                ..Default::default()
            };
            store
                .update(&k, &held("h1", r.fence), &expired)
                .await
                .unwrap();
            continue;
        }
        live.push(r);
    }
    let mut read = store.get_many(&keys).await.unwrap();
    read.sort_by(|a, b| a.key.cmp(&b.key));
    live.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(read.len(), live.len());
    assert_eq!(read, live, "each live record as `get` reads it, no other");
    assert!(store.get_many(&[]).await.unwrap().is_empty());
}
