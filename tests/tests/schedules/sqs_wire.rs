//! The deployed fan-out queue on the wire (`snapwake::fanout::SqsQueue`): the tick's due
//! occurrences reach a standard SQS queue double that checks SigV4 and the batch as SQS does,
//! ten a call, a follow-up delayed to its time; entries SQS fails without blaming the sender
//! are sent again, a sender's fault and a bad signature are errors.

use snapwake::fanout::{DueOccurrence, FanoutError};
use snapwake::schedule::DueLead;
use snapwake_tests::sqs_queue::{EntryFault, SqsDouble};

use super::*;

/// `count` occurrences, of as many agents, due at 08:30 of one day.
fn due_at_0830(count: usize) -> Vec<DueOccurrence> {
    let at: u64 = 1_800_000_000_000; // a whole minute
    (0..count)
        .map(|i| DueOccurrence {
            agent: AgentKey::new(Kind::Codex, format!("studio-alice-{i:03}")),
            tick_ms: at,
            wake_ms: Some(at),
            sleep_ms: None,
            version: 1,
            lead: DueLead::default(),
            not_before_ms: None,
            idle: false,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn occurrences_reach_the_queue_signed_ten_a_call_a_follow_up_delayed() {
    let sqs = SqsDouble::start().await;
    let due = due_at_0830(25);
    sqs.sender().send(&due).await.expect("sent");
    assert_eq!(sqs.bad_signatures(), 0);
    assert_eq!(sqs.calls(), 3, "25 messages, 10 a call");
    let messages = sqs.messages();
    assert_eq!(messages.len(), 25);
    for (message, occurrence) in messages.iter().zip(&due) {
        assert_eq!(message.delay_s, 0, "due now");
        let body: DueOccurrence = serde_json::from_str(&message.body).expect("a due occurrence");
        assert_eq!(&body, occurrence);
    }
    // A follow-up, due in 4.2 s, is delayed 5 s: whole seconds, rounded up, never delivered
    // early. (4 s when the send itself came more than 0.2 s after the follow-up was made, as on
    // a loaded CI machine once: what is left of its wait, rounded up.)
    let made = snapwake::ambient::now_ms();
    let follow_up = due[0].follow_up(std::time::Duration::from_millis(4_200));
    sqs.sender().send(&[follow_up]).await.expect("sent");
    let sent_by = snapwake::ambient::now_ms();
    let delay_s = sqs.messages().last().map(|m| m.delay_s).expect("sent");
    assert!(delay_s <= 5, "{delay_s} s");
    assert!(
        delay_s * 1_000 >= 4_200u64.saturating_sub(sent_by - made),
        "{delay_s} s after {} ms",
        sent_by - made
    );
    // A repeat is taken again (a standard queue): the schedule item makes it harmless.
    sqs.sender().send(&due[..3]).await.expect("sent again");
    assert_eq!(sqs.messages().len(), 29);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_sqs_fails_are_sent_again_and_a_senders_fault_is_an_error() {
    let sqs = SqsDouble::start().await;
    let due = due_at_0830(10);
    sqs.fail_next(&[EntryFault::Internal, EntryFault::Internal]);
    sqs.sender()
        .send(&due)
        .await
        .expect("sent, two of them twice");
    assert_eq!(sqs.calls(), 2);
    assert_eq!(sqs.messages().len(), 10, "every occurrence once");

    let more = &due_at_0830(12)[10..];
    sqs.fail_next(&[EntryFault::Invalid]);
    let refused = sqs.sender().send(more).await;
    assert!(
        matches!(refused, Err(FanoutError::Refused { ref reason, .. }) if reason == "InvalidParameterValue"),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_signature_is_refused_and_nothing_is_queued() {
    let sqs = SqsDouble::start().await;
    let sent = sqs
        .sender_signing_with("not-the-secret")
        .send(&due_at_0830(3))
        .await;
    assert!(matches!(sent, Err(FanoutError::Unreachable(_))), "{sent:?}");
    assert_eq!(sqs.bad_signatures(), 1);
    assert!(sqs.messages().is_empty());
}

/// The resume function's tick with the deployed fan-out (`Fanout::Sqs`), its schedules on
/// DynamoDB Local: what comes due goes to the queue on the wire, one message per agent, and the
/// tick starts nothing itself. Its `SendMessageBatch` is a call the function's policy must allow
/// (tests/tests/iam.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tick_hands_what_is_due_to_the_queue_on_the_wire() {
    let sqs = SqsDouble::start().await;
    let (store, world, _) = deployed("sqs-tick", Duration::from_millis(300)).await;
    let f = Resume {
        fanout: snapwake::fanout::Fanout::Sqs(sqs.sender()),
        ..resume_fn(store.clone(), world.client(), quick_wake())
    };
    let mut agents = Vec::new();
    let mut due = 0;
    for i in 0..3 {
        let agent_id = asleep_agent(&world, &f, &format!("Wired {i}")).await;
        let body = json!({"timezone": "UTC", "wake": "30 8 * * *"});
        due = at(put_schedule(&f, &agent_id, body).await["next_wake_at"]
            .as_str()
            .unwrap());
        agents.push(agent_id);
    }
    world.sim.control().reset_counters();
    let report = tick(&f, due).await;
    assert_eq!(
        (report.due, report.queued, report.woke),
        (3, 3, 0),
        "{report:?}"
    );
    assert_eq!(
        resumes(&world.sim.control()),
        0,
        "the consumers wake, not the tick"
    );
    let mut queued: Vec<String> = sqs
        .messages()
        .iter()
        .map(|m| {
            let due: DueOccurrence = serde_json::from_str(&m.body).expect("a due occurrence");
            due.agent.agent_id
        })
        .collect();
    queued.sort();
    agents.sort();
    assert_eq!(queued, agents);
    assert_eq!(sqs.bad_signatures(), 0);
}
