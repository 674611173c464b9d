//! A queue in this process with the semantics of the SQS FIFO queue it stands in for (`serve`,
//! the tests, the benches): one message group per agent, worked one message at a time and in
//! order; a message whose deduplication id was sent within the window is dropped; at most
//! `max_concurrency` messages in flight (the event source mapping's maximum concurrency times
//! its batch size); a message not acknowledged, because its handler failed or was dropped
//! halfway (a consumer killed), is delivered again after the visibility timeout, and after
//! `max_receives` deliveries it goes to the dead letters (counted and logged, as the alarm on
//! the dead-letter queue would see it).
//!
//! One consumer loop ([`LocalQueue::consume`] or [`LocalQueue::drain`]) per queue.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::DueOccurrence;

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
    /// How long a deduplication id is remembered.
    pub dedup_window: Duration,
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
            // SQS FIFO's: five minutes.
            dedup_window: Duration::from_secs(300),
        }
    }
}

/// What the queue has done since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Messages accepted.
    pub sent: u64,
    /// Messages dropped as repeats of one sent within the window.
    pub deduplicated: u64,
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
    /// Deduplication ids and when they were sent.
    seen: HashMap<String, Instant>,
    /// Groups with a message in flight.
    busy: HashSet<String>,
    in_flight: usize,
    stats: QueueStats,
}

struct Held {
    message: DueOccurrence,
    group: String,
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

    /// Accept `due`, dropping each whose deduplication id was sent within the window.
    pub fn send(&self, due: &[DueOccurrence]) {
        let now = Instant::now();
        let window = self.shared.settings.dedup_window;
        {
            let mut state = self.state();
            if state.seen.len() > 4 * due.len().max(1024) {
                state
                    .seen
                    .retain(|_, at| now.saturating_duration_since(*at) < window);
            }
            for message in due {
                let id = message.dedup_id();
                if state
                    .seen
                    .get(&id)
                    .is_some_and(|at| now.saturating_duration_since(*at) < window)
                {
                    state.stats.deduplicated += 1;
                    continue;
                }
                state.seen.insert(id, now);
                state.pending.push_back(Held {
                    group: message.group_id(),
                    message: message.clone(),
                    receives: 0,
                    visible_at: now,
                });
                state.stats.sent += 1;
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

    /// Deliver messages to `handle` until the queue is idle (a message to be delivered again
    /// is waited for).
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
            tokio::select! {
                Some(()) = running.next(), if !running.is_empty() => {}
                () = self.shared.changed.notified() => {}
                () = tokio::time::sleep_until(wake_at) => {}
            }
        }
    }

    /// Up to `free` messages that can be delivered now, in order, one per group; and when the
    /// first one waiting to be visible again will be.
    fn take(&self, free: usize) -> (Vec<Held>, Option<Instant>) {
        let now = Instant::now();
        let mut state = self.state();
        let mut blocked: HashSet<String> = state.busy.clone();
        let mut taken = Vec::new();
        let mut next_visible: Option<Instant> = None;
        let mut i = 0;
        while i < state.pending.len() && taken.len() < free {
            let held = &state.pending[i];
            if blocked.contains(&held.group) {
                i += 1;
                continue;
            }
            if held.visible_at > now {
                next_visible =
                    Some(next_visible.map_or(held.visible_at, |n| n.min(held.visible_at)));
                blocked.insert(held.group.clone());
                i += 1;
                continue;
            }
            let Some(mut held) = state.pending.remove(i) else {
                break;
            };
            blocked.insert(held.group.clone());
            state.busy.insert(held.group.clone());
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
            state.busy.remove(&held.group);
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
                    // Ahead of its group's later messages, as FIFO keeps it.
                    state.pending.push_front(held);
                }
            }
        }
        self.shared.changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::domain::{AgentKey, Kind};
    use crate::schedule::DueLead;

    /// A message of `agent` from the tick at `tick_ms`, one item version a minute.
    fn due(agent: &str, tick_ms: u64) -> DueOccurrence {
        DueOccurrence {
            agent: AgentKey::new(Kind::Codex, agent),
            tick_ms,
            wake_ms: Some(1),
            sleep_ms: None,
            version: tick_ms / 60_000,
            lead: DueLead::default(),
        }
    }

    fn quick(max_concurrency: usize) -> QueueSettings {
        QueueSettings {
            max_concurrency,
            max_receives: 3,
            visibility: Duration::from_millis(50),
            dedup_window: Duration::from_secs(300),
        }
    }

    #[tokio::test]
    async fn repeats_are_dropped_and_each_group_is_worked_in_order_one_at_a_time() {
        let queue = LocalQueue::new(quick(8));
        let messages: Vec<_> = (0..5)
            .flat_map(|minute| ["a", "b"].map(|agent| due(agent, minute * 60_000)))
            .collect();
        queue.send(&messages);
        queue.send(&messages[..4]);
        assert_eq!(queue.stats().deduplicated, 4);
        let order = Mutex::new(Vec::new());
        let busy = Mutex::new(HashSet::new());
        queue
            .drain(|m| {
                let (order, busy) = (&order, &busy);
                async move {
                    let agent = m.agent.agent_id.clone();
                    assert!(
                        busy.lock().unwrap().insert(agent.clone()),
                        "{agent} twice at once"
                    );
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    busy.lock().unwrap().remove(&agent);
                    order.lock().unwrap().push((agent, m.tick_ms));
                    true
                }
            })
            .await;
        let order = order.into_inner().unwrap();
        for agent in ["a", "b"] {
            let ticks: Vec<u64> = order
                .iter()
                .filter(|(a, _)| a == agent)
                .map(|(_, t)| *t)
                .collect();
            assert_eq!(ticks, vec![0, 60_000, 120_000, 180_000, 240_000], "{agent}");
        }
        let stats = queue.stats();
        assert_eq!((stats.sent, stats.received, stats.failed), (10, 10, 0));
        assert_eq!(stats.most_in_flight, 2, "one per group");
    }

    #[tokio::test]
    async fn a_message_not_acknowledged_comes_again_then_goes_to_the_dead_letters() {
        let queue = LocalQueue::new(quick(4));
        queue.send(&[due("flaky", 0), due("flaky", 60_000), due("broken", 0)]);
        let tries = Mutex::new(HashMap::<(String, u64), usize>::new());
        let order = Mutex::new(Vec::new());
        queue
            .drain(|m| {
                let (tries, order) = (&tries, &order);
                async move {
                    let n = {
                        let mut tries = tries.lock().unwrap();
                        let n = tries
                            .entry((m.agent.agent_id.clone(), m.tick_ms))
                            .or_default();
                        *n += 1;
                        *n
                    };
                    order
                        .lock()
                        .unwrap()
                        .push((m.agent.agent_id.clone(), m.tick_ms));
                    match m.agent.agent_id.as_str() {
                        "flaky" => n > 1 || m.tick_ms > 0,
                        _ => false,
                    }
                }
            })
            .await;
        let order = order.into_inner().unwrap();
        let flaky: Vec<u64> = order
            .iter()
            .filter(|(a, _)| a == "flaky")
            .map(|(_, t)| *t)
            .collect();
        // The failed first message comes again before its group's second.
        assert_eq!(flaky, vec![0, 0, 60_000]);
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
