//! A queue in this process with the semantics of the standard SQS queue it stands in for
//! (`serve`, the tests, the benches): a message becomes visible when its tick's time has come
//! (a follow-up is sent ahead of it: SQS's per-message delay); at most `max_concurrency`
//! messages are in flight (the event source mapping's maximum concurrency times its batch
//! size); a message not acknowledged, because its handler failed or was dropped halfway (a
//! consumer killed), is delivered again after the visibility timeout, and after
//! `max_receives` deliveries it goes to the dead letters (counted and logged, as the alarm on
//! the dead-letter queue would see it). As with a standard queue, nothing keeps one agent's
//! messages in order or apart, and nothing drops a repeat: what fires an occurrence once is
//! the schedule item's conditional write (docs/schedules.md, "Fan-out").
//!
//! One consumer loop ([`LocalQueue::consume`] or [`LocalQueue::drain`]) per queue.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::message::DueOccurrence;

/// How the queue behaves; the defaults are the deployed queue's and mapping's
/// (infra/template.yaml).
#[derive(Clone, Debug)]
pub struct QueueSettings {
    /// Messages handled at once.
    pub max_concurrency: usize,
    /// Deliveries of one message before it goes to the dead letters.
    pub max_receives: u32,
    /// How long a message not acknowledged stays invisible before it is delivered again.
    pub visibility: Duration,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            // MaximumConcurrency 10 invocations × BatchSize 10 messages.
            max_concurrency: 100,
            max_receives: 5,
            // Locally a failed message is tried again sooner than deployed (180 s); the next
            // minute's tick sends a fresh one anyway.
            visibility: Duration::from_secs(30),
        }
    }
}

/// What the queue has done since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Messages accepted.
    pub sent: u64,
    /// Of those, sent with a delay (follow-ups).
    pub delayed: u64,
    /// Deliveries (a message delivered again counts again).
    pub received: u64,
    /// Deliveries not acknowledged.
    pub failed: u64,
    /// Messages given up on after `max_receives` deliveries.
    pub dead_lettered: u64,
    /// The most messages in flight at once.
    pub most_in_flight: usize,
}

/// The queue; clones share it.
#[derive(Clone)]
pub struct LocalQueue {
    shared: Arc<Shared>,
}

struct Shared {
    settings: QueueSettings,
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Default)]
struct State {
    pending: VecDeque<Held>,
    in_flight: usize,
    stats: QueueStats,
}

struct Held {
    message: DueOccurrence,
    receives: u32,
    visible_at: Instant,
}

/// A message being handled: acknowledged when its handler says so; dropped unacknowledged
/// (the handler failed, or its consumer was killed), it is delivered again.
struct InFlight {
    queue: LocalQueue,
    held: Option<Held>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            self.queue.settle(held, false);
        }
    }
}

impl LocalQueue {
    pub fn new(settings: QueueSettings) -> LocalQueue {
        LocalQueue {
            shared: Arc::new(Shared {
                settings,
                state: Mutex::new(State::default()),
                changed: Notify::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain counters and queues: still usable.
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Accept `due`, each visible once its tick's time has come.
    pub fn send(&self, due: &[DueOccurrence]) {
        let now = Instant::now();
        {
            let mut state = self.state();
            for message in due {
                let delay = message.delay();
                state.stats.sent += 1;
                state.stats.delayed += u64::from(!delay.is_zero());
                state.pending.push_back(Held {
                    message: message.clone(),
                    receives: 0,
                    visible_at: now + delay,
                });
            }
        }
        self.shared.changed.notify_one();
    }

    pub fn stats(&self) -> QueueStats {
        self.state().stats
    }

    /// Nothing waiting and nothing in flight.
    pub fn is_idle(&self) -> bool {
        let state = self.state();
        state.pending.is_empty() && state.in_flight == 0
    }

    /// Deliver every message to `handle` (true: acknowledged), for as long as the future runs.
    pub async fn consume<F, Fut>(&self, handle: F)
    where
        F: Fn(DueOccurrence) -> Fut,
        Fut: Future<Output = bool>,
    {
        self.deliver(handle, false).await;
    }

    /// Deliver messages to `handle` until the queue is idle (a message to be delivered again,
    /// or sent with a delay, is waited for).
    pub async fn drain<F, Fut>(&self, handle: F)
    where
        F: Fn(DueOccurrence) -> Fut,
        Fut: Future<Output = bool>,
    {
        self.deliver(handle, true).await;
    }

    async fn deliver<F, Fut>(&self, handle: F, until_idle: bool)
    where
        F: Fn(DueOccurrence) -> Fut,
        Fut: Future<Output = bool>,
    {
        let handle = &handle;
        let mut running = FuturesUnordered::new();
        loop {
            let free = self
                .shared
                .settings
                .max_concurrency
                .saturating_sub(running.len());
            let (taken, next_visible) = self.take(free);
            for held in taken {
                let message = held.message.clone();
                let mut in_flight = InFlight {
                    queue: self.clone(),
                    held: Some(held),
                };
                running.push(async move {
                    let acknowledged = handle(message).await;
                    if let Some(held) = in_flight.held.take() {
                        in_flight.queue.settle(held, acknowledged);
                    }
                });
            }
            if until_idle && running.is_empty() && self.is_idle() {
                return;
            }
            let wake_at =
                next_visible.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            // Biased: the same order of events always takes the same branch (a simulated
            // deployment replays a seed so).
            tokio::select! {
                biased;
                Some(()) = running.next(), if !running.is_empty() => {}
                () = self.shared.changed.notified() => {}
                () = tokio::time::sleep_until(wake_at) => {}
            }
        }
    }

    /// Up to `free` messages visible now, in the order they were sent (or sent back); and
    /// when the first one waiting to be visible will be.
    fn take(&self, free: usize) -> (Vec<Held>, Option<Instant>) {
        let now = Instant::now();
        let mut state = self.state();
        let mut taken = Vec::new();
        let mut next_visible: Option<Instant> = None;
        let mut i = 0;
        while i < state.pending.len() && taken.len() < free {
            let visible_at = state.pending[i].visible_at;
            if visible_at > now {
                next_visible = Some(next_visible.map_or(visible_at, |n| n.min(visible_at)));
                i += 1;
                continue;
            }
            let Some(mut held) = state.pending.remove(i) else {
                break;
            };
            held.receives += 1;
            state.stats.received += 1;
            taken.push(held);
        }
        state.in_flight += taken.len();
        state.stats.most_in_flight = state.stats.most_in_flight.max(state.in_flight);
        (taken, next_visible)
    }

    fn settle(&self, mut held: Held, acknowledged: bool) {
        {
            let mut state = self.state();
            state.in_flight = state.in_flight.saturating_sub(1);
            if !acknowledged {
                state.stats.failed += 1;
                if held.receives >= self.shared.settings.max_receives {
                    state.stats.dead_lettered += 1;
                    tracing::warn!(
                        agent = %held.message.agent,
                        receives = held.receives,
                        "a due occurrence went to the dead letters"
                    );
                } else {
                    held.visible_at = Instant::now() + self.shared.settings.visibility;
                    state.pending.push_back(held);
                }
            }
        }
        self.shared.changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::domain::{AgentKey, Kind};
    use crate::schedule::DueLead;

    /// A message of `agent` for the tick at `tick_ms`.
    fn due(agent: &str, tick_ms: u64) -> DueOccurrence {
        DueOccurrence {
            agent: AgentKey::new(Kind::Codex, agent),
            tick_ms,
            wake_ms: Some(1),
            sleep_ms: None,
            version: 1,
            lead: DueLead::default(),
            not_before_ms: None,
        }
    }

    fn quick(max_concurrency: usize) -> QueueSettings {
        QueueSettings {
            max_concurrency,
            max_receives: 3,
            visibility: Duration::from_millis(50),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn every_message_is_delivered_a_delayed_one_once_its_time_has_come() {
        let queue = LocalQueue::new(quick(8));
        // The follow-up's time is on the wall clock in whole milliseconds (as SQS's delay is on
        // its own), the queue's waits on tokio's paused one: the wall time that passes between
        // the send and the drain, and the millisecond the send's time was truncated to, are
        // time the paused clock never sees, so the delay it waits is that much shorter.
        let sent = std::time::Instant::now();
        let later = due("a", 5).follow_up(Duration::from_secs(2));
        queue.send(&[due("a", 0), due("b", 0), later]);
        queue.send(&[due("a", 0)]);
        assert_eq!((queue.stats().sent, queue.stats().delayed), (4, 1));
        let started = Instant::now();
        let unseen = sent.elapsed() + Duration::from_millis(1);
        let seen = Mutex::new(Vec::new());
        queue
            .drain(|m| {
                let seen = &seen;
                async move {
                    seen.lock()
                        .unwrap()
                        .push((m.agent.agent_id, m.tick_ms, started.elapsed()));
                    true
                }
            })
            .await;
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 4, "a repeat is delivered too: {seen:?}");
        let late = seen.iter().find(|(_, t, _)| *t > 5).unwrap();
        assert!(
            late.2 + unseen >= Duration::from_secs(2),
            "{seen:?} ({unseen:?})"
        );
        assert!(seen
            .iter()
            .filter(|(_, t, _)| *t == 0)
            .all(|(_, _, at)| at.is_zero()));
    }

    #[tokio::test]
    async fn a_message_not_acknowledged_comes_again_then_goes_to_the_dead_letters() {
        let queue = LocalQueue::new(quick(4));
        queue.send(&[due("flaky", 0), due("broken", 0)]);
        let tries = Mutex::new(HashMap::<String, usize>::new());
        queue
            .drain(|m| {
                let tries = &tries;
                async move {
                    let n = {
                        let mut tries = tries.lock().unwrap();
                        let n = tries.entry(m.agent.agent_id.clone()).or_default();
                        *n += 1;
                        *n
                    };
                    match m.agent.agent_id.as_str() {
                        "flaky" => n > 1,
                        _ => false,
                    }
                }
            })
            .await;
        let tries = tries.into_inner().unwrap();
        assert_eq!((tries["flaky"], tries["broken"]), (2, 3));
        let stats = queue.stats();
        assert_eq!(stats.dead_lettered, 1, "broken, after 3 receives");
        assert_eq!(stats.failed, 1 + 3);
    }

    #[tokio::test]
    async fn a_consumer_killed_halfway_leaves_its_messages_to_be_delivered_again() {
        let queue = LocalQueue::new(quick(4));
        queue.send(&[due("a", 0), due("b", 0)]);
        let started = AtomicUsize::new(0);
        let killed = tokio::time::timeout(
            Duration::from_millis(100),
            queue.consume(|_| {
                started.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<bool>()
            }),
        )
        .await;
        assert!(killed.is_err());
        assert_eq!(started.load(Ordering::SeqCst), 2);
        let handled = Mutex::new(Vec::new());
        queue
            .drain(|m| {
                let handled = &handled;
                async move {
                    handled.lock().unwrap().push(m.agent.agent_id);
                    true
                }
            })
            .await;
        let mut handled = handled.into_inner().unwrap();
        handled.sort();
        assert_eq!(handled, ["a", "b"]);
        assert!(queue.is_idle());
    }
}
