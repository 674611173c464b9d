//! The fan-out path (docs/schedules.md, "Fan-out"): the tick hands what is due to the queue,
//! and the resume function consumes it as the SQS event source mapping delivers it.

use snapwake::domain::WakeState;
use snapwake::fanout::{DueChannel, DueOccurrence, Fanout};
use snapwake::schedule::DueLead;
use snapwake::store::{Answer, Call, Layer, StoreError};
use snapwake_resume::{Answer as Answered, Invocation};
use std::sync::atomic::Ordering;

use super::*;

/// `inner`, but the table cannot be reached for one agent's schedule.
struct UnreachableFor<S> {
    inner: S,
    agent: AgentKey,
}

impl<S: Send + Sync> Layer for UnreachableFor<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        let refused = matches!(call, Call::GetSchedule(key) if *key == self.agent);
        Box::pin(async move {
            if refused {
                return Err(StoreError::Unavailable("injected: unreachable".into()));
            }
            answer.await
        })
    }
}

/// `inner`, but another writer (a consumer of the same occurrence, a person's PUT) writes
/// one agent's schedule item just before each of the next `rivals` writes of it: each of
/// those loses its condition.
struct RivalFor<S> {
    inner: S,
    agent: AgentKey,
    rivals: std::sync::atomic::AtomicU32,
}

impl<S: ScheduleStore + Send + Sync> Layer for RivalFor<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        let ours = match call {
            Call::PutSchedule(record) => record.key.as_ref() == Some(&self.agent),
            Call::SetSchedule(key) => *key == self.agent,
            _ => false,
        };
        Box::pin(async move {
            let rival = ours
                && self
                    .rivals
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
            if rival {
                // The item as it is, written again: its version moves on.
                let current = self.inner.get_schedule(&self.agent).await?;
                if let Some(current) = current {
                    self.inner.put_schedule(&current, current.version).await?;
                }
            }
            answer.await
        })
    }
}

/// The SQS batch fixture (a real event's shape) carrying `bodies`.
fn batch(bodies: &[String]) -> Value {
    let fixture: Value =
        serde_json::from_str(include_str!("../../fixtures/eventbridge/sqs-batch.json")).unwrap();
    let record = fixture["Records"][0].clone();
    let records: Vec<Value> = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| {
            let mut r = record.clone();
            r["messageId"] = json!(format!("m-{i}"));
            r["body"] = json!(body);
            r
        })
        .collect();
    json!({ "Records": records })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tick_queues_what_is_due_and_the_consumers_wake_each_agent_once() {
    let (store, world, ctl) = deployed("fanout-wakes", Duration::from_millis(300)).await;
    let queue = DueChannel::new();
    let f = Resume {
        fanout: Fanout::Channel(queue.clone()),
        ..resume_fn(store.clone(), world.client(), quick_wake())
    };
    let mut agents = Vec::new();
    for i in 0..6 {
        agents.push(asleep_agent(&world, &f, &format!("Queued {i}")).await);
    }
    ctl.reset_counters();
    let body = json!({"timezone": "UTC", "wake": "30 8 * * *"});
    let mut w = 0;
    for agent_id in &agents {
        w = at(
            put_schedule(&f, agent_id, body.clone()).await["next_wake_at"]
                .as_str()
                .unwrap(),
        );
    }
    // The tick acts on nothing itself; twice (a repeated delivery), it queues each once.
    for _ in 0..2 {
        let report = hand_over(&f, w).await;
        assert_eq!(
            (report.due, report.queued, report.woke, report.carried),
            (6, 6, 0, 0),
            "{report:?}"
        );
    }
    assert_eq!(resumes(&ctl), 0, "nothing sent by the tick itself");
    drain(&queue, &f).await;
    // Carried to the end a minute apart, as the Scheduler ticks.
    for minute in 1..=5 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        hand_over(&f, w + minute * 60_000).await;
        drain(&queue, &f).await;
    }
    let stats = queue.counts();
    // Each tick's six (a repeat is not dropped: the schedule item makes it harmless), and
    // the follow-ups that saw the wakes Ready: how many depends on when each was Ready (a
    // consumer that saw its wake Ready before it finished needs none; under AgentKit's rate
    // limits in CI, two of six did), so only the outcomes below are counted.
    assert_eq!(stats.sent - stats.delayed, 12, "{stats:?}");
    assert_eq!(stats.failed, 0, "{stats:?}");
    assert_eq!(resumes(&ctl), 6, "one Resume per agent");
    for agent_id in &agents {
        let record = store.get(&key(agent_id)).await.unwrap().unwrap();
        assert_eq!(record.state, WakeState::Awake, "{agent_id}");
        let schedule = store.get_schedule(&key(agent_id)).await.unwrap().unwrap();
        assert_eq!(
            schedule.last.map(|l| l.outcome),
            Some("reached".to_string()),
            "{agent_id}"
        );
        assert_eq!(live_sessions(&ctl, agent_id).len(), 1, "{agent_id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_reports_only_the_messages_it_could_not_handle() {
    let (store, world, ctl) = deployed("fanout-batch", Duration::from_millis(300)).await;
    let healthy = resume_fn(store.clone(), world.client(), quick_wake());
    let fine = asleep_agent(&world, &healthy, "Fine").await;
    let broken = asleep_agent(&world, &healthy, "Broken").await;
    let body = json!({"timezone": "UTC", "wake": "30 8 * * *"});
    let w = at(
        put_schedule(&healthy, &fine, body.clone()).await["next_wake_at"]
            .as_str()
            .unwrap(),
    );
    put_schedule(&healthy, &broken, body).await;
    ctl.reset_counters();
    let f = resume_fn(
        UnreachableFor {
            inner: store.clone(),
            agent: key(&broken),
        },
        world.client(),
        quick_wake(),
    );
    let due = |agent_id: &str| {
        serde_json::to_string(&DueOccurrence {
            agent: key(agent_id),
            tick_ms: w,
            wake_ms: Some(w),
            sleep_ms: None,
            version: 1,
            lead: DueLead::default(),
            not_before_ms: None,
            idle: false,
        })
        .unwrap()
    };
    let event = batch(&[due(&fine), "not a due occurrence".into(), due(&broken)]);
    let invocation: Invocation = serde_json::from_value(event).expect("an SQS batch");
    let mut context = lambda_http::Context::default();
    context.deadline = snapwake::ambient::now_ms() + 29_000;
    let answered = f.invoke(invocation, context).await.unwrap();
    let Answered::Queue(response) = answered else {
        panic!("not a batch's answer: {answered:?}");
    };
    let answer = serde_json::to_value(&response).unwrap();
    // The unreadable body is dropped (delivering it again cannot help); the one the table
    // could not be reached for is delivered again.
    assert_eq!(
        answer,
        json!({"batchItemFailures": [{"itemIdentifier": "m-2"}]})
    );
    assert_eq!(resumes(&ctl), 1, "the fine one was woken");
    let record = store.get(&key(&broken)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Asleep);
}

/// An occurrence whose consumer lost every race for its schedule item (another consumer, a
/// person's PUT) is decided again a second later through the queue, within its minute: not
/// acknowledged and left to a tick that may never send it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contended_occurrence_is_decided_again_within_its_minute() {
    let (store, world, ctl) = deployed("fanout-contended", Duration::from_millis(300)).await;
    let queue = DueChannel::new();
    let ticking = Resume {
        fanout: Fanout::Channel(queue.clone()),
        ..resume_fn(store.clone(), world.client(), quick_wake())
    };
    let agent_id = asleep_agent(&world, &ticking, "Contended").await;
    let body = json!({"timezone": "UTC", "wake": "30 8 * * *"});
    let w = at(
        put_schedule(&ticking, &agent_id, body).await["next_wake_at"]
            .as_str()
            .unwrap(),
    );
    ctl.reset_counters();
    let report = hand_over(&ticking, w).await;
    assert_eq!((report.due, report.queued), (1, 1), "{report:?}");
    // The consumer loses its three tries at the item, then wins once the rival is done.
    let consumer = Resume {
        fanout: Fanout::Channel(queue.clone()),
        ..resume_fn(
            RivalFor {
                inner: store.clone(),
                agent: key(&agent_id),
                rivals: std::sync::atomic::AtomicU32::new(3),
            },
            world.client(),
            quick_wake(),
        )
    };
    drain(&queue, &consumer).await;
    let stats = queue.counts();
    assert!(
        stats.delayed >= 1,
        "decided again through the queue: {stats:?}"
    );
    assert_eq!(resumes(&ctl), 1, "woken once, with no tick since");
    let schedule = store.get_schedule(&key(&agent_id)).await.unwrap().unwrap();
    assert_eq!(
        schedule.last.map(|l| l.outcome),
        Some("reached".to_string()),
        "{agent_id}"
    );
    assert_eq!(live_sessions(&ctl, &agent_id).len(), 1);
}
