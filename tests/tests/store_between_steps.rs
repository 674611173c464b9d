//! The store can fail between steps. A table that stops answering ends every request and
//! tick by its budget, whichever call hangs (below). And (docs/wake-protocol.md, step 6) the fenced write that
//! records `resume_sent_at` lands, its answer is lost, and the re-read that would settle it
//! fails too. The holder never sent Resume, so it must not leave the agent waiting out the
//! readiness timeout on a Resume that never was: it takes the marker back, answers 503, and the
//! next caller wakes the agent with one Resume.

use std::time::Duration;

use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::store::{AgentStore, Call, Changes, Condition};
use snapwake::wake::WakeSettings;
use snapwake_resume::Resume;
use snapwake_tests::lost_answers::LostAnswers;
use snapwake_tests::stalling::{Stalling, Stalls};
use snapwake_tests::*;

/// The Resume marker: the fenced write that sets `resume_sent_at`.
fn marker(condition: &Condition, changes: &Changes) -> bool {
    matches!(condition, Condition::Held { .. })
        && matches!(changes.resume_sent_at_ms, Some(Some(_)))
}

fn settings() -> WakeSettings {
    // The default readiness timeout: a marker left behind would hold callers for minutes.
    let ready_timeout = Duration::from_secs(360);
    wake_settings(
        Duration::from_secs(60),
        ready_timeout,
        Duration::from_secs(4),
    )
}

async fn scenario(reads_after: u32) {
    let (store, world, _) = deployed("marker-lost", Duration::ZERO).await;
    let (agent_id, snapshot) = world.asleep_agent("alice", "Marker");
    // Lost on every attempt the lock makes (each lands), the reads after them failing.
    let lossy = LostAnswers::new(store.clone(), marker, reads_after);
    lossy.lose_updates.store(
        snapwake::lock::LockSettings::default().write_attempts,
        std::sync::atomic::Ordering::SeqCst,
    );
    let resume = resume_fn(lossy, world.client(), settings());
    let path = format!("/v1/agents/codex/{agent_id}/resume");
    let call = || resume.handle(alices_request("POST", &path));
    let ctl = world.sim.control();

    let (status, body) = answer(&call().await);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["retryable"], true, "{body}");
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 0);
    let key = AgentKey::new(Kind::Codex, &agent_id);
    let record = store.get(&key).await.unwrap().expect("a record");
    assert_eq!(record.state, WakeState::Asleep, "{record:?}");
    assert!(
        record.resume_sent_at_ms.is_none(),
        "marker taken back: {record:?}"
    );

    // The next caller wakes the agent (once the table answers its reads again): no six minutes
    // of 202 on a Resume never sent.
    let (mut status, mut body) = answer(&call().await);
    for _ in 0..reads_after {
        if status != 503 {
            break;
        }
        (status, body) = answer(&call().await);
    }
    assert_eq!(status, 200, "{body}");
    let counters = ctl.counters();
    assert_eq!(counters.received("ResumeSessionFromSnapshot"), 1);
    assert_eq!(counters.resumes_of(&snapshot), 1);
    assert_eq!(counters.live_sessions_of(&agent_id), 1);
}

#[tokio::test]
async fn a_lost_resume_marker_whose_reread_fails_is_taken_back_not_waited_out() {
    // The write's own re-read fails (the lock re-reads to settle an ambiguous write).
    scenario(1).await;
}

#[tokio::test]
async fn a_lost_resume_marker_whose_rereads_keep_failing_is_still_taken_back() {
    // Every re-read of that write fails; the take-back itself is fenced and needs none.
    scenario(3).await;
}

// ---------------------------------------------------------------------------------------------
// A table that stops answering: every store call a request makes, on every path, ends with
// the request's budget (docs/architecture.md, "Deadlines and budgets"), never with the SDK's own
// timeouts, which a chain of calls would add up past API Gateway's 30 s.

/// How late past its deadline (plus the store's grace) an answer may come: scheduling only.
const SLACK: Duration = Duration::from_millis(1500);

/// A Lambda context whose invocation ends `ms` from now: the request's budget follows it.
fn ending_in(ms: u64) -> lambda_http::Context {
    let mut context = lambda_http::Context::default();
    context.deadline = snapwake::ambient::now_ms() + ms;
    context
}

/// `request` served within a Lambda that ends in 5 s (a budget of 3 s): its answer, and how
/// long it took. A request that hangs fails the test after 20 s.
async fn within_budget<S, K>(
    f: &Resume<S, K>,
    request: lambda_http::Request,
) -> ((u16, serde_json::Value), Duration)
where
    S: AgentStore + snapwake::store::ScheduleStore,
    K: snapwake::agentkit::AgentKit,
{
    use lambda_http::RequestExt;
    let budget = Duration::from_secs(3);
    let request = request.with_lambda_context(ending_in(5_000));
    let started = std::time::Instant::now();
    let answered = tokio::time::timeout(Duration::from_secs(20), f.handle(request))
        .await
        .expect("the request outlived its budget by far: a store call was not bounded");
    let took = started.elapsed();
    assert!(
        took <= budget + snapwake::store::STORE_GRACE + SLACK,
        "answered after {took:?}, past the budget of {budget:?}"
    );
    (answer(&answered), took)
}

fn schedule_calls(call: &Call<'_>) -> bool {
    matches!(
        call,
        Call::GetSchedule(_)
            | Call::PutSchedule(_)
            | Call::SetSchedule(_)
            | Call::DeleteSchedule(_)
            | Call::DueSchedules
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schedule_routes_answer_within_budget_when_the_table_hangs() {
    let (store, world, _) = deployed("hang-schedule-routes", Duration::ZERO).await;
    let f = resume_fn(
        Stalling::new(store.clone(), schedule_calls),
        world.client(),
        quick_wake(),
    );
    f.store.arm(false);
    let (agent_id, _) = world.asleep_agent("alice", "Hung");
    let path = format!("/v1/agents/codex/{agent_id}/schedule");
    let wake = alices_request("POST", &format!("/v1/agents/codex/{agent_id}/resume"));
    assert_eq!(answer(&f.handle(prefer_wait(wake, 10)).await).0, 200);
    let body = r#"{"timezone": "Europe/Berlin", "wake": "30 8 * * MON-FRI"}"#;
    let (answered, _) =
        within_budget(&f, request("PUT", &path, Who::User("alice"), Some(body))).await;
    assert_eq!(answered.0, 200, "{}", answered.1);

    f.store.arm(true);
    for (method, body) in [("PUT", Some(body)), ("GET", None), ("DELETE", None)] {
        let ((status, problem), took) =
            within_budget(&f, request(method, &path, Who::User("alice"), body)).await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (503, Some("STORE_UNAVAILABLE")),
            "{method} after {took:?}: {problem}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_ends_by_its_deadline_whichever_call_of_the_table_hangs() {
    let (store, world, _) = deployed("hang-tick", Duration::ZERO).await;
    let stalled: [(&str, Stalls); 3] = [
        ("the due index", |c| matches!(c, Call::DueSchedules)),
        ("the agent's record", |c| matches!(c, Call::Get(_))),
        ("the schedule item's write", |c| {
            matches!(c, Call::PutSchedule(_))
        }),
    ];
    for (what, stalls) in stalled {
        let mut f = resume_fn(
            Stalling::new(store.clone(), stalls),
            world.client(),
            quick_wake(),
        );
        // A wake and a sleep both due within the next two minutes: more often than a
        // deployment's floor allows, never in the same minute.
        f.schedules.min_interval = Duration::ZERO;
        f.store.arm(false);
        let (agent_id, _) = world.asleep_agent("alice", what);
        let wake = alices_request("POST", &format!("/v1/agents/codex/{agent_id}/resume"));
        assert_eq!(answer(&f.handle(prefer_wait(wake, 10)).await).0, 200);
        let put = request(
            "PUT",
            &format!("/v1/agents/codex/{agent_id}/schedule"),
            Who::User("alice"),
            Some(r#"{"timezone": "UTC", "wake": "*/2 * * * *", "sleep": "1-59/2 * * * *"}"#),
        );
        assert_eq!(answer(&f.handle(put).await).0, 200);
        let due = snapwake::ambient::now_ms() + 120_000;

        f.store.arm(true);
        let budget = Duration::from_secs(2);
        let started = std::time::Instant::now();
        let ticked = tokio::time::timeout(
            Duration::from_secs(20),
            f.tick_and_consume(due, snapwake::invocation::Deadline::after(budget)),
        )
        .await;
        let took = started.elapsed();
        assert!(
            ticked.is_ok(),
            "{what} hung: the tick outlived its deadline by far"
        );
        assert!(
            took <= budget + snapwake::store::STORE_GRACE + SLACK,
            "{what} hung: the tick ended after {took:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_whose_session_claim_or_offboarding_read_hangs_answers_within_budget() {
    let (store, world, _) = deployed("hang-claim", Duration::ZERO).await;
    let documents: [(&str, Stalls); 2] = [
        // A `snapshot-<id>` agent's resumed session is claimed after its Resume.
        (
            "the session claim",
            |c| matches!(c, Call::PutDocument(key) if key.pk.starts_with("CLAIM#")),
        ),
        (
            "the owner's offboarding",
            |c| matches!(c, Call::GetDocument(key) if key.pk.starts_with("OFFBOARD#")),
        ),
    ];
    for (what, stalls) in documents {
        let f = resume_fn(
            Stalling::new(store.clone(), stalls),
            world.client(),
            quick_wake(),
        );
        let (agent_id, who) = if what == "the session claim" {
            let snapshot = world
                .sim
                .control()
                .seed_snapshot(snapwake_sim::SeedSnapshot {
                    tool_id: world.recoverable.clone(),
                    session_id: Some("s-nameless".into()),
                    ..snapwake_sim::SeedSnapshot::default()
                })
                .unwrap();
            (format!("snapshot-{snapshot}"), Who::Admin("root"))
        } else {
            (world.asleep_agent("alice", what).0, Who::User("alice"))
        };
        let path = format!("/v1/agents/codex/{agent_id}/resume");
        let ((status, body), took) = within_budget(&f, request("POST", &path, who, None)).await;
        assert!(
            matches!(status, 200 | 202 | 503),
            "{what}: {status} after {took:?}: {body}"
        );
    }
}
