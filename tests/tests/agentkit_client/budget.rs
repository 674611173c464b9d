//! The deployment's AgentKit budget across instances: four clients, each with its own table
//! connection (as four Lambda instances have), share one account's limit through the table on
//! DynamoDB Local, and a person's call goes before the background's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use snapwake::budget::{AgentKitBudget, BudgetSettings};
use snapwake::domain::Trigger;
use snapwake::invocation::Invocation;
use snapwake::store::dynamo::DynamoStore;
use snapwake_sim::RateLimits;

use super::*;

const INSTANCES: usize = 4;
/// Background calls per instance: together about four seconds of the background lane.
const CALLS: usize = 15;
const LIMIT: u32 = 20;

fn limits() -> RateLimits {
    RateLimits::off().with("GetSession", Some(LIMIT))
}

/// A client of `sim` as one instance: no retries (a 429 shows), its budget kept in `table`
/// through a connection of its own, or none.
async fn instance(sim: &RunningSim, table: Option<&str>) -> AgentKitClient {
    let client = AgentKitClient::new(
        &config(&sim.endpoint(), &[BEIJING]),
        SimConfig::default().credentials,
    )
    .unwrap()
    .with_retry_policy(RetryPolicy {
        max_retries: 0,
        ..fast_retries()
    });
    match table {
        None => client,
        Some(table) => {
            let store = snapwake_tests::dynamo_table(table, false).await;
            let settings = BudgetSettings {
                limits: limits(),
                ..BudgetSettings::default()
            };
            client.with_budget(Arc::new(AgentKitBudget::<DynamoStore>::new(
                store, settings,
            )))
        }
    }
}

fn get_session() -> GetSession {
    GetSession {
        tool_id: "t-none".into(),
        session_id: "s-none".into(),
    }
}

/// `CALLS` background GetSessions from each instance at once; answers whether AgentKit
/// throttled any, and counts each finished call in `done`.
async fn fleet(clients: Vec<AgentKitClient>, done: Arc<AtomicUsize>) -> usize {
    let mut tasks = Vec::new();
    for client in &clients {
        for _ in 0..CALLS {
            let client = client.clone();
            let done = done.clone();
            tasks.push(tokio::spawn(
                Invocation::background(snapwake_resume::FUNCTION, Trigger::Schedule).run(
                    async move {
                        let answer = client
                            .call(
                                BEIJING,
                                &get_session(),
                                Deadline::after(Duration::from_secs(30)),
                            )
                            .await;
                        done.fetch_add(1, Ordering::SeqCst);
                        matches!(answer, Err(AgentKitError::Throttled { .. })) as usize
                    },
                ),
            ));
        }
    }
    let mut throttled = 0;
    for t in tasks {
        throttled += t.await.unwrap();
    }
    throttled
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_share_one_limit_through_the_table_and_people_go_first() {
    let sim = Simulator::start(SimConfig {
        rate_limits: limits(),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let ctl = sim.control();

    // Without the budget, each instance thinks it has the whole limit: AgentKit refuses some.
    let mut alone = Vec::new();
    for _ in 0..INSTANCES {
        alone.push(instance(&sim, None).await);
    }
    let throttled_alone = fleet(alone, Arc::new(AtomicUsize::new(0))).await;
    assert!(
        throttled_alone > 0,
        "60 calls at once over a limit of 20 a second"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ctl.reset_counters();

    // With it: the same calls, none refused, never more than the limit in a second.
    let table = snapwake_tests::dynamo_store("budget-instances").await;
    let table = table.table().to_string();
    let mut budgeted = Vec::new();
    for _ in 0..INSTANCES {
        budgeted.push(instance(&sim, Some(&table)).await);
    }
    // A budget whose table does not answer within its wait lets the call through (it fails
    // open, and says so): a DynamoDB Local just started, or loaded by CI's other tests, answers
    // some slowly (all 60 went through unbudgeted once, 40 refused). Those calls are counted
    // from the log and may be refused; the budgeted ones must not be. One call through each
    // instance first warms the table.
    let logs = snapwake_tests::captured_log::CapturedLog::default();
    let writer = logs.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || writer.clone())
            .finish(),
    )
    .expect("this test's process has no subscriber yet");
    for client in &budgeted {
        client
            .call(BEIJING, &get_session(), soon())
            .await
            .unwrap_err();
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ctl.reset_counters();
    let done = Arc::new(AtomicUsize::new(0));
    let background = tokio::spawn(fleet(budgeted, done.clone()));
    // A person's call in the middle of it is not queued behind the fleet: it is answered
    // while most of the background calls still wait for their slots.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let person = instance(&sim, Some(&table)).await;
    person
        .call(BEIJING, &get_session(), soon())
        .await
        .unwrap_err();
    let behind = INSTANCES * CALLS - done.load(Ordering::SeqCst);
    assert!(
        behind > INSTANCES * CALLS / 2,
        "the person's call waited for the fleet: only {behind} background calls were left"
    );
    // Slots leave on time but reach AgentKit a little early or late: on a loaded 2-core CI
    // machine DynamoDB Local answers a reservation after its slot, or the process stalls past
    // it, and the calls that missed their slots go out together (9 of 60 were refused so, a
    // deployed client retries them). Those the budget says left late are counted as the
    // unbudgeted ones are; of the rest, AgentKit refuses a twentieth at most. And the budget
    // must have done its work whatever the load: far fewer refused than without it.
    let throttled = background.await.unwrap();
    let text = logs.text();
    let unbudgeted = text
        .matches("the AgentKit budget did not answer in time")
        .count()
        + text
            .matches("the AgentKit budget could not be read")
            .count();
    let late = text
        .matches("the AgentKit budget's slot was missed")
        .count();
    assert!(
        throttled <= INSTANCES * CALLS / 20 + unbudgeted + late,
        "{throttled} of {} calls throttled by AgentKit, {unbudgeted} of them sent unbudgeted, \
         {late} late",
        INSTANCES * CALLS
    );
    assert!(
        throttled * 2 < throttled_alone,
        "{throttled} throttled with the budget, {throttled_alone} without it"
    );
    eprintln!(
        "{throttled} throttled ({throttled_alone} without the budget), {unbudgeted} sent \
         unbudgeted (the table too slow), {late} late"
    );
    let counted = ctl.counters().limit("GetSession");
    assert!(counted.refused <= throttled as u64 + 1, "{counted:?}");
    assert!(counted.most_in_a_second <= LIMIT, "{counted:?}");
    assert_eq!(
        counted.accepted + counted.refused,
        (INSTANCES * CALLS + 1) as u64
    );
}
