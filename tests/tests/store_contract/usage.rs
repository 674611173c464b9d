//! Usage in the store (docs/usage.md): an announced write leaves the usage mark on its record,
//! the same in both adapters; a day row adds each change once, however often and however
//! concurrently it is delivered, and reads back by day range and owner.

use snapwake::domain::usage::{Resting, Tally, WokenBy};
use snapwake::domain::{Announce, Announcement, Trigger};
use snapwake::store::{UsageRow, UsageStore};

use crate::support::*;

fn announced(what: Announce, trigger: Trigger, state: WakeState) -> Changes {
    Changes {
        state: Some(state),
        announce: Some(Announcement { what, trigger }),
        describe: Some(Description {
            owner_key: Some("k-alice".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) async fn announced_writes_leave_the_usage_mark<S: AgentStore + 'static>(store: Arc<S>) {
    let k = key("usage-mark");
    let write = |changes: Changes, version: u64| {
        let store = store.clone();
        let k = k.clone();
        async move {
            store
                .update(&k, &Condition::Version(version), &changes)
                .await
                .expect("written")
        }
    };
    let created = write(
        announced(Announce::Created, Trigger::Http, WakeState::Awake),
        0,
    )
    .await;
    let mark = created.usage.expect("a create leaves a mark");
    let at = snapwake::ambient::epoch_ms(created.updated_at.as_deref().expect("updated_at"))
        .expect("a time")
        / 1000;
    assert_eq!(mark.resting, Resting::Awake);
    assert_eq!(mark.since_s, at, "the mark's time is the write's");
    assert_eq!(mark.woken_by, Some(WokenBy::Person));
    assert_eq!(mark.reference_from_s, Some(at));
    // A write that is no state change keeps the mark as it is.
    let quiet = Changes {
        verified_at_ms: Some(now_ms()),
        ..Default::default()
    };
    let verified = write(quiet, created.version).await;
    assert_eq!(verified.usage, Some(mark));
    let asleep = write(
        announced(Announce::Asleep, Trigger::Idle, WakeState::Asleep),
        verified.version,
    )
    .await;
    let slept = asleep.usage.expect("a mark");
    assert_eq!(slept.resting, Resting::Asleep);
    assert_eq!(
        (slept.woken_by, slept.reference_from_s),
        (Some(WokenBy::Person), Some(at)),
        "a sleep keeps what woke it and the reference session's start"
    );
    let woken = write(
        announced(Announce::Awake, Trigger::Schedule, WakeState::Awake),
        asleep.version,
    )
    .await;
    assert_eq!(
        woken.usage.and_then(|m| m.woken_by),
        Some(WokenBy::Schedule)
    );
    let gone = write(
        announced(Announce::Deleted, Trigger::Sweep, WakeState::Gone),
        woken.version,
    )
    .await;
    let gone = gone.usage.expect("a mark");
    assert_eq!((gone.resting, gone.reference_from_s), (Resting::Gone, None));
    // What the store reads back is what it answered.
    let read = store.get(&k).await.expect("read").expect("a record");
    assert_eq!(read.usage, Some(gone));
}

fn row(day: u64, owner_key: &str, agent: &str, awake: u64) -> UsageRow {
    UsageRow {
        day,
        owner_key: owner_key.into(),
        owner: Some(format!("{owner_key}@example.com")),
        agent: key(agent),
        tally: Tally {
            awake_person_s: awake,
            wakes: 1,
            ..Tally::default()
        },
    }
}

pub(crate) async fn usage_rows_add_each_change_once<S: UsageStore + 'static>(store: Arc<S>) {
    const DAY: u64 = 20_000;
    // One change delivered by 12 consumers at once: added once.
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.add_usage(&row(DAY, "k-a", "a", 60), "c/a/1").await })
        })
        .collect();
    let mut added = 0;
    for t in tasks {
        added += usize::from(t.await.expect("joined").expect("written"));
    }
    assert_eq!(added, 1);
    // 20 different changes at once: none lost.
    let tasks: Vec<_> = (2..22)
        .map(|v| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .add_usage(&row(DAY, "k-a", "a", 10), &format!("c/a/{v}"))
                    .await
            })
        })
        .collect();
    for t in tasks {
        assert!(t.await.expect("joined").expect("written"));
    }
    store
        .add_usage(&row(DAY + 1, "k-a", "a", 5), "c/a/30")
        .await
        .expect("written");
    store
        .add_usage(&row(DAY, "k-b", "b", 7), "c/b/1")
        .await
        .expect("written");
    store
        .add_usage(&row(DAY + 5, "k-a", "a", 1), "c/a/31")
        .await
        .expect("written");

    let rows = store.usage_rows(DAY, DAY + 1, None).await.expect("rows");
    let mut seen: Vec<(u64, String, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r.day,
                r.owner_key.clone(),
                r.tally.awake_person_s,
                r.tally.wakes,
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            (DAY, "k-a".into(), 60 + 20 * 10, 21),
            (DAY, "k-b".into(), 7, 1),
            (DAY + 1, "k-a".into(), 5, 1),
        ]
    );
    let alices = store
        .usage_rows(DAY, DAY + 10, Some(&["k-a".to_string()]))
        .await
        .expect("rows");
    assert_eq!(alices.len(), 3);
    assert!(alices.iter().all(|r| r.owner_key == "k-a"));
    assert_eq!(alices[0].owner.as_deref(), Some("k-a@example.com"));
    assert_eq!(alices[0].agent, key("a"));
}
