use std::sync::Arc;

use super::*;
use crate::domain::Trigger;
use crate::invocation::Invocation;
use crate::store::memory::MemoryStore;
use crate::store::StoreError;

const RESUME: &str = "ResumeSessionFromSnapshot";

fn budget(store: Arc<MemoryStore>, limits: &str) -> AgentKitBudget<Arc<MemoryStore>> {
    AgentKitBudget::new(
        store,
        BudgetSettings {
            limits: limits.parse().unwrap(),
            ..BudgetSettings::default()
        },
    )
}

/// The first free slot of `bucket`, taking nothing (a reserve whose latest has passed).
async fn free_at(store: &MemoryStore, bucket: &str) -> u64 {
    match store.reserve(bucket, now_ms(), 1, 0).await.unwrap() {
        Reserved::Full { free_at_ms, .. } => free_at_ms,
        Reserved::At { .. } => panic!("a reserve with a past latest took a slot"),
    }
}

#[test]
fn lanes_split_each_limit_in_whole_slots() {
    let settings = BudgetSettings {
        limits: "agentkit,ResumeSessionFromSnapshot=50,GetSession=1,ListSessions=off"
            .parse()
            .unwrap(),
        ..BudgetSettings::default()
    };
    // 90% of 50 is 45: a fifth to people.
    assert_eq!(
        settings.lanes(RESUME),
        Some(Lanes {
            people: 9,
            background: 36
        })
    );
    // The Tool writes: 90% of 3 is 2, one each.
    assert_eq!(
        settings.lanes("UpdateTool"),
        Some(Lanes {
            people: 1,
            background: 1
        })
    );
    // Too small to split: all background, which people take first.
    assert_eq!(
        settings.lanes("GetSession"),
        Some(Lanes {
            people: 0,
            background: 1
        })
    );
    assert_eq!(settings.lanes("ListSessions"), None);
}

#[tokio::test]
async fn a_person_goes_first_while_the_fleet_has_booked_the_background_lane() {
    let store = Arc::new(MemoryStore::new());
    let b = budget(store.clone(), "off,ResumeSessionFromSnapshot=50");
    // The fleet: 36 background slots a second, booked two seconds ahead.
    let now = now_ms();
    for _ in 0..72 {
        store
            .reserve(
                "ResumeSessionFromSnapshot#background",
                now,
                28,
                now + 10_000,
            )
            .await
            .unwrap();
    }
    let soon = Deadline::after(Duration::from_millis(200));
    // More background work cannot start before its latest, and is told when it could.
    let refused = Invocation::background("test", Trigger::Http)
        .run(b.take(RESUME, soon))
        .await
        .unwrap_err();
    assert!(refused.free_in > Duration::from_millis(1500), "{refused:?}");
    // A person's wake takes their lane's slot now.
    b.take(RESUME, soon).await.unwrap();
    assert!(free_at(&store, "ResumeSessionFromSnapshot#people").await > now);
    // And the next person's, queued only behind people: 9 a second, so ~111 ms apart.
    b.take(RESUME, soon).await.unwrap();
}

#[tokio::test]
async fn a_person_takes_a_free_background_slot_before_waiting_for_their_lane() {
    let store = Arc::new(MemoryStore::new());
    let b = budget(store.clone(), "off,ResumeSessionFromSnapshot=50");
    let later = Deadline::after(Duration::from_secs(5));
    b.take(RESUME, later).await.unwrap();
    // Their lane's next slot is ~111 ms away, the background's is free: they take that.
    let people_next = free_at(&store, "ResumeSessionFromSnapshot#people").await;
    b.take(RESUME, later).await.unwrap();
    assert_eq!(
        free_at(&store, "ResumeSessionFromSnapshot#people").await,
        people_next
    );
    assert!(free_at(&store, "ResumeSessionFromSnapshot#background").await > now_ms());
}

#[tokio::test]
async fn unlimited_actions_take_nothing() {
    let store = Arc::new(MemoryStore::new());
    let b = budget(store.clone(), "off,ResumeSessionFromSnapshot=50");
    b.take("GetSession", Deadline::after(Duration::ZERO))
        .await
        .unwrap();
    // The GetSession buckets were never made: a reserve now takes their first slot.
    assert!(matches!(
        store
            .reserve("GetSession#people", now_ms(), 1, now_ms() + 10)
            .await
            .unwrap(),
        Reserved::At { .. }
    ));
}

#[tokio::test]
async fn throttling_slows_the_rate_once_a_second_never_below_half_and_it_recovers() {
    let store = Arc::new(MemoryStore::new());
    let b = budget(store.clone(), "off,ResumeSessionFromSnapshot=50");
    let bucket = "ResumeSessionFromSnapshot#background";
    let now = now_ms();
    assert_eq!(b.interval_ms(bucket, 36, now), 28);
    b.slow_down(RESUME).await;
    // Every instance learns it from the next slot it takes.
    let other = budget(store.clone(), "off,ResumeSessionFromSnapshot=50");
    Invocation::background("test", Trigger::Http)
        .run(other.take(RESUME, Deadline::after(Duration::from_secs(1))))
        .await
        .unwrap();
    assert_eq!(other.interval_ms(bucket, 36, now), 38);
    // A second 429 in the same burst does not slow it again in the table.
    b.slow_down(RESUME).await;
    let seen = store
        .reserve(bucket, now_ms(), 1, 0)
        .await
        .unwrap()
        .slowdown();
    assert_eq!(seen.map(|s| s.factor_permille), Some(750));
    // Burst after burst: three quarters each time, never below half.
    assert_eq!(slowed(750), 562);
    assert_eq!(slowed(562), 500);
    assert_eq!(slowed(500), 500);
    // Recovery: linear back to the whole rate over RECOVERY.
    let s = Some(Slowdown {
        factor_permille: 500,
        since_ms: 1_000,
    });
    assert_eq!(factor_at(s, 1_000), 500);
    assert_eq!(factor_at(s, 1_000 + RECOVERY.as_millis() as u64 / 2), 750);
    assert_eq!(factor_at(s, 1_000 + RECOVERY.as_millis() as u64 * 5), 1000);
    assert_eq!(factor_at(None, 0), 1000);
}

/// A table that cannot be reached.
struct Unreachable;

impl BudgetStore for Unreachable {
    async fn reserve(&self, _: &str, _: u64, _: u64, _: u64) -> Result<Reserved, StoreError> {
        Err(StoreError::Unavailable("injected".into()))
    }

    async fn slow_down(&self, _: &str, _: Slowdown, _: u64) -> Result<(), StoreError> {
        Err(StoreError::Unavailable("injected".into()))
    }
}

#[tokio::test]
async fn a_budget_the_table_cannot_answer_lets_the_call_go() {
    let b = AgentKitBudget::new(Unreachable, BudgetSettings::default());
    b.take(RESUME, Deadline::after(Duration::ZERO))
        .await
        .unwrap();
    Invocation::background("test", Trigger::Http)
        .run(b.take(RESUME, Deadline::after(Duration::ZERO)))
        .await
        .unwrap();
    b.slow_down(RESUME).await;
}
