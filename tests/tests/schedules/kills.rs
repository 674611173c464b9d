//! A tick, or a consumer of the fan-out queue, killed between any two of its steps: the process
//! frozen at a call to the table, then gone, either before that call reached the table or after
//! it landed. What comes after it (the message delivered again, the next ticks) loses no
//! occurrence (the agent is woken) and repeats none (one Resume, one session).

use std::sync::atomic::{AtomicUsize, Ordering};

use snapwake::domain::WakeState;
use snapwake::fanout::{DueChannel, Fanout};
use snapwake::store::{Answer, Call, Layer};

use super::*;

/// Where a killed tick stops at its fatal call.
#[derive(Clone, Copy, Debug)]
enum Dies {
    /// Before the call reaches the table.
    Before,
    /// After the call landed, before its answer is used.
    After,
}

/// `inner`, until its `at`-th call (from 0): that call and every later one never answer, as
/// in a process frozen there (the test then drops the tick, as the process is killed).
struct Dying<S> {
    inner: S,
    at: usize,
    dies: Dies,
    calls: AtomicUsize,
}

impl<S> Dying<S> {
    fn new(inner: S, at: usize, dies: Dies) -> Self {
        Dying {
            inner,
            at,
            dies,
            calls: AtomicUsize::new(0),
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl<S: Send + Sync> Layer for Dying<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, _: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        Box::pin(async move {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            if n < self.at {
                return answer.await;
            }
            if n == self.at && matches!(self.dies, Dies::After) {
                let _landed = answer.await;
            }
            std::future::pending().await
        })
    }
}

/// The lease a tick's acquire takes: short, so a dead tick's lock lapses in a second.
const LEASE: Duration = Duration::from_secs(1);

/// After a kill and the recovery: the occurrence at `w` woke `agent_id` with one Resume, its
/// record awake, the schedule's last occurrence reached and the next one a day later.
async fn woken_once(
    store: &(impl AgentStore + ScheduleStore),
    ctl: &SimControl,
    agent_id: &str,
    w: u64,
    what: &str,
) {
    let record = store.get(&key(agent_id)).await.unwrap().unwrap();
    let schedule = store.get_schedule(&key(agent_id)).await.unwrap().unwrap();
    let what = format!("{what}: record {record:?}, schedule {schedule:?}");
    assert_eq!(resumes(ctl), 1, "{what}: one Resume for one occurrence");
    assert_eq!(live_sessions(ctl, agent_id).len(), 1, "{what}");
    assert_eq!(record.state, WakeState::Awake, "{what}");
    assert_eq!(
        schedule.last.as_ref().map(|l| l.outcome.as_str()),
        Some("reached"),
        "{what}"
    );
    assert_eq!(schedule.next_wake_ms, Some(w + 86_400_000), "{what}");
}

fn settings() -> snapwake::wake::WakeSettings {
    snapwake::wake::WakeSettings {
        lock: quick_lock(LEASE),
        ready_timeout: Duration::from_secs(2),
        ..quick_wake()
    }
}

/// Healthy ticks of the occurrence `w`, a minute apart as the Scheduler ticks once the function
/// is back (a follow-up lost with the killed invocation is sent again once a minute late),
/// until the occurrence is closed.
async fn recover<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    w: u64,
) {
    for minute in 0..10 {
        tick(f, w + minute * 60_000).await;
        let schedule = f.store.get_schedule(&key(agent_id)).await.unwrap();
        // Closed: nothing open, and the schedule moved on past `w` (a consumer killed before
        // it opened the occurrence left it due, for the next tick to send again).
        if schedule.is_some_and(|s| s.open.is_none() && s.next_wake_ms != Some(w)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("{agent_id}: the occurrence is still open ten ticks after the kill");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_killed_at_any_step_loses_and_repeats_no_occurrence() {
    let (store, world, ctl) = deployed("tick-kills", Duration::from_millis(300)).await;
    let healthy = resume_fn(store.clone(), world.client(), settings());
    let wake_at_830 = json!({"timezone": "UTC", "wake": "30 8 * * *"});

    // The table calls of one clean tick of one due wake, counted.
    let agent_id = asleep_agent(&world, &healthy, "Counted").await;
    let w = at(
        put_schedule(&healthy, &agent_id, wake_at_830.clone()).await["next_wake_at"]
            .as_str()
            .unwrap(),
    );
    let counted = resume_fn(
        Dying::new(store.clone(), usize::MAX, Dies::Before),
        world.client(),
        settings(),
    );
    assert_eq!(tick(&counted, w).await.woke, 1);
    let steps = counted.store.calls();
    assert!(steps >= 5, "a tick of one wake makes {steps} table calls");

    let mut killed = 0;
    for k in 0..steps {
        for dies in [Dies::Before, Dies::After] {
            let what = format!("killed {dies:?} call {k} of {steps}");
            let agent_id = asleep_agent(&world, &healthy, &what).await;
            let w = at(put_schedule(&healthy, &agent_id, wake_at_830.clone()).await
                ["next_wake_at"]
                .as_str()
                .unwrap());
            let dying = resume_fn(
                Dying::new(store.clone(), k, dies),
                world.client(),
                settings(),
            );
            // A tick of one due wake ends well within this unless it is frozen at its fatal
            // call; one merely slow is cut short a little later, which is a kill too.
            let deadline = Deadline::after(Duration::from_secs(25));
            let ran =
                tokio::time::timeout(Duration::from_secs(1), dying.tick_and_consume(w, deadline))
                    .await;
            if ran.is_err() {
                killed += 1;
            }
            drop(dying);
            // The next tick comes once the dead one's acquire lease has lapsed, as a minute
            // later it would in production (a lease covers one invocation's work).
            let lapsed = LEASE + settings().lock.skew_margin + Duration::from_millis(100);
            tokio::time::sleep(lapsed).await;

            recover(&healthy, &agent_id, w).await;
            woken_once(&store, &ctl, &agent_id, w, &what).await;
        }
    }
    assert!(
        killed >= steps,
        "only {killed} of {} ticks died before they ended",
        2 * steps
    );
}

/// The queue the tick hands occurrences to: a message a killed consumer took is gone, and the
/// next tick sends the occurrence again.
fn queue() -> DueChannel {
    DueChannel::new()
}

/// Healthy consumers of what the queue holds (a message the dead one left comes again), then
/// healthy ticks through the queue, until the occurrence `w` is closed.
async fn recover_queued<S: AgentStore + ScheduleStore, K: AgentKit>(
    queue: &DueChannel,
    f: &Resume<S, K>,
    agent_id: &str,
    w: u64,
) {
    // A minute apart, as the Scheduler ticks: the queue drops a second message of one
    // occurrence in the same minute.
    for minute in 1..=10 {
        drain(queue, f).await;
        let schedule = f.store.get_schedule(&key(agent_id)).await.unwrap();
        // Closed: nothing open, and the schedule moved on past `w` (a consumer killed before
        // it opened the occurrence left it due, for the next tick to send again).
        if schedule.is_some_and(|s| s.open.is_none() && s.next_wake_ms != Some(w)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        hand_over(f, w + minute * 60_000).await;
    }
    panic!("{agent_id}: the occurrence is still open ten ticks after the kill");
}

/// The resume function over `store`, its tick handing occurrences to `queue`.
fn queued<S, K>(store: S, agentkit: K, queue: &DueChannel) -> Resume<S, K> {
    Resume {
        fanout: Fanout::Channel(queue.clone()),
        ..resume_fn(store, agentkit, settings())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_consumer_killed_at_any_step_loses_and_repeats_no_occurrence() {
    let (store, world, ctl) = deployed("consumer-kills", Duration::from_millis(300)).await;
    let queue = queue();
    let healthy = queued(store.clone(), world.client(), &queue);
    let wake_at_830 = json!({"timezone": "UTC", "wake": "30 8 * * *"});

    // The table calls of one clean consumer of one due wake, counted.
    let agent_id = asleep_agent(&world, &healthy, "Counted").await;
    let w = at(
        put_schedule(&healthy, &agent_id, wake_at_830.clone()).await["next_wake_at"]
            .as_str()
            .unwrap(),
    );
    let report = hand_over(&healthy, w).await;
    assert_eq!(
        (report.due, report.queued, report.woke),
        (1, 1, 0),
        "{report:?}"
    );
    // The same tick again (the Scheduler delivers at least once): queued again, harmless.
    hand_over(&healthy, w).await;
    assert_eq!(queue.counts().sent, 2, "{:?}", queue.counts());
    let counted = queued(
        Dying::new(store.clone(), usize::MAX, Dies::Before),
        world.client(),
        &queue,
    );
    drain(&queue, &counted).await;
    let steps = counted.store.calls();
    assert!(
        steps >= 5,
        "a consumer of one wake makes {steps} table calls"
    );
    assert_eq!(resumes(&ctl), 1);
    recover_queued(&queue, &healthy, &agent_id, w).await;

    let mut killed = 0;
    for k in 0..steps {
        for dies in [Dies::Before, Dies::After] {
            let what = format!("consumer killed {dies:?} call {k} of {steps}");
            let agent_id = asleep_agent(&world, &healthy, &what).await;
            let w = at(put_schedule(&healthy, &agent_id, wake_at_830.clone()).await
                ["next_wake_at"]
                .as_str()
                .unwrap());
            assert_eq!(hand_over(&healthy, w).await.queued, 1, "{what}");
            let dying = queued(Dying::new(store.clone(), k, dies), world.client(), &queue);
            // The consumer gets the message and is killed a second in: frozen at its fatal
            // call, or cut short a little later, which is a kill too.
            let ran = tokio::time::timeout(Duration::from_secs(1), drain(&queue, &dying)).await;
            if ran.is_err() {
                killed += 1;
            }
            drop(dying);
            let lapsed = LEASE + settings().lock.skew_margin + Duration::from_millis(100);
            tokio::time::sleep(lapsed).await;

            recover_queued(&queue, &healthy, &agent_id, w).await;
            woken_once(&store, &ctl, &agent_id, w, &what).await;
        }
    }
    assert!(
        killed >= steps,
        "only {killed} of {} consumers died before they ended",
        2 * steps
    );
}
