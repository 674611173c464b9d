//! The due-occurrence queue of `serve`, the tests and the benches: a channel into the same consumer
//! the deployed queue feeds, delaying follow-ups as SQS does.
//!
//! Nothing is delivered again: the next minute's tick resends an occurrence still open.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::invocation::Deadline;

use super::message::DueOccurrence;

/// Messages worked at once, as deployed: 10 invocations × batches of 10 (infra/template.yaml).
pub const AT_ONCE: usize = 100;

/// What the channel has carried since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelCounts {
    pub sent: u64,
    /// Of those, sent with a delay (follow-ups).
    pub delayed: u64,
    /// Messages whose consumer did not finish with them.
    pub failed: u64,
    /// The most messages worked at once.
    pub most_at_once: usize,
}

/// How long a consumer works the channel.
#[derive(Clone, Copy)]
enum Until {
    Never,
    Idle,
    IdleOr(Deadline),
}

/// A channel of due occurrences; clones send into the same one.
#[derive(Clone)]
pub struct DueChannel {
    inner: Arc<Inner>,
}

struct Inner {
    sender: UnboundedSender<DueOccurrence>,
    /// One consumer loop at a time takes it.
    receiver: tokio::sync::Mutex<UnboundedReceiver<DueOccurrence>>,
    /// Follow-ups still waiting for their delay.
    waiting: AtomicUsize,
    counts: Mutex<ChannelCounts>,
}

impl Default for DueChannel {
    fn default() -> Self {
        let (sender, receiver) = unbounded_channel();
        DueChannel {
            inner: Arc::new(Inner {
                sender,
                receiver: tokio::sync::Mutex::new(receiver),
                waiting: AtomicUsize::new(0),
                counts: Mutex::new(ChannelCounts::default()),
            }),
        }
    }
}

impl DueChannel {
    pub fn new() -> DueChannel {
        DueChannel::default()
    }

    fn counted(&self, change: impl FnOnce(&mut ChannelCounts)) {
        change(&mut self.inner.counts.lock().unwrap_or_else(|p| p.into_inner()));
    }

    pub fn counts(&self) -> ChannelCounts {
        *self.inner.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Send `due`: each at once, or, a follow-up, once its delay is over.
    pub fn send(&self, due: &[DueOccurrence]) {
        for message in due {
            let delay = message.delay();
            self.counted(|c| {
                c.sent += 1;
                c.delayed += u64::from(!delay.is_zero());
            });
            if delay.is_zero() {
                // The receiver lives as long as the sender (both are ours): this cannot fail.
                let _ = self.inner.sender.send(message.clone());
                continue;
            }
            self.inner.waiting.fetch_add(1, Ordering::SeqCst);
            let (inner, message) = (self.inner.clone(), message.clone());
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = inner.sender.send(message);
                // After the send: a drain that sees nothing waiting sees the message.
                inner.waiting.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }

    /// Work messages as they come, `at_once` at most, while polled; `handle` is `true` once done.
    pub async fn consume<F, Fut>(&self, at_once: usize, handle: F)
    where
        F: Fn(DueOccurrence) -> Fut,
        Fut: Future<Output = bool>,
    {
        self.work(at_once, handle, Until::Never).await;
    }

    /// Work the messages until none is left, in flight or delayed (a test's or a bench's consumer).
    pub async fn drain<F, Fut>(&self, at_once: usize, handle: F)
    where
        F: Fn(DueOccurrence) -> Fut,
        Fut: Future<Output = bool>,
    {
        self.work(at_once, handle, Until::Idle).await;
    }

    /// Work the messages until none is left or `until` has passed (a tick consuming what it sent).
    pub async fn drain_until<F, Fut>(&self, at_once: usize, until: Deadline, handle: F)
    where
        F: Fn(DueOccurrence) -> Fut,
        Fut: Future<Output = bool>,
    {
        self.work(at_once, handle, Until::IdleOr(until)).await;
    }

    /// Work what comes until `until`, then finish those in flight and take no new one.
    async fn work<F, Fut>(&self, at_once: usize, handle: F, until: Until)
    where
        F: Fn(DueOccurrence) -> Fut,
        Fut: Future<Output = bool>,
    {
        // Another consumer working the channel works its messages too: wait for it, but not past
        // a deadline.
        let lock = self.inner.receiver.lock();
        let mut receiver = match until {
            Until::IdleOr(d) => match tokio::time::timeout_at(d.instant(), lock).await {
                Ok(receiver) => receiver,
                Err(_) => return,
            },
            _ => lock.await,
        };
        let mut running: FuturesUnordered<Fut> = FuturesUnordered::new();
        loop {
            let idle = running.is_empty()
                && receiver.is_empty()
                && self.inner.waiting.load(Ordering::SeqCst) == 0;
            let late = matches!(until, Until::IdleOr(d) if d.is_past());
            if (idle && !matches!(until, Until::Never)) || (late && running.is_empty()) {
                return;
            }
            let stop = async {
                match until {
                    Until::IdleOr(d) => tokio::time::sleep_until(d.instant()).await,
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                Some(finished) = running.next(), if !running.is_empty() => {
                    if !finished {
                        self.counted(|c| c.failed += 1);
                    }
                }
                Some(message) = receiver.recv(), if !late && running.len() < at_once.max(1) => {
                    running.push(handle(message));
                    let now = running.len();
                    self.counted(|c| c.most_at_once = c.most_at_once.max(now));
                }
                _ = stop, if !late => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::domain::{AgentKey, Kind};
    use crate::schedule::DueLead;

    fn due(agent: &str, tick_ms: u64) -> DueOccurrence {
        DueOccurrence {
            agent: AgentKey::new(Kind::Codex, agent),
            tick_ms,
            wake_ms: Some(1),
            sleep_ms: None,
            version: 1,
            lead: DueLead::default(),
            not_before_ms: None,
            idle: false,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_works_every_message_a_follow_up_once_its_delay_is_over() {
        let channel = DueChannel::new();
        let later = due("a", 5).follow_up(Duration::from_secs(2));
        channel.send(&[due("a", 0), due("b", 0), later]);
        channel.send(&[due("a", 0)]);
        let started = tokio::time::Instant::now();
        let seen = Mutex::new(Vec::new());
        channel
            .drain(8, |m| {
                let seen = &seen;
                async move {
                    seen.lock().unwrap().push((m.tick_ms, started.elapsed()));
                    true
                }
            })
            .await;
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 4, "a repeat is delivered too: {seen:?}");
        let late = seen.iter().find(|(t, _)| *t > 5).unwrap();
        assert!(late.1 >= Duration::from_millis(1_900), "{seen:?}");
        assert_eq!(channel.counts().sent, 4);
        assert_eq!(channel.counts().delayed, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_until_a_deadline_leaves_a_later_follow_up_for_the_next() {
        let channel = DueChannel::new();
        let soon = due("a", 5).follow_up(Duration::from_secs(1));
        let late = due("b", 5).follow_up(Duration::from_secs(10));
        channel.send(&[due("c", 0), soon, late]);
        let seen = Mutex::new(Vec::new());
        let handle = |m: DueOccurrence| {
            let seen = &seen;
            async move {
                seen.lock().unwrap().push(m.agent.agent_id.clone());
                true
            }
        };
        let until = Deadline::after(Duration::from_secs(5));
        channel.drain_until(8, until, handle).await;
        assert!(
            until.is_past(),
            "it waited for the follow-up due within its time"
        );
        assert_eq!(*seen.lock().unwrap(), ["c", "a"], "the later one not yet");
        // The next drain finds it, once its delay is over.
        channel.drain(8, handle).await;
        assert_eq!(*seen.lock().unwrap(), ["c", "a", "b"]);
    }

    #[tokio::test(start_paused = true)]
    async fn no_more_than_at_once_are_worked_and_a_failure_is_counted_not_sent_again() {
        let channel = DueChannel::new();
        let messages: Vec<DueOccurrence> = (0..20).map(|i| due(&format!("a{i}"), 0)).collect();
        channel.send(&messages);
        let handled = AtomicUsize::new(0);
        channel
            .drain(3, |m| {
                let handled = &handled;
                async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    handled.fetch_add(1, Ordering::SeqCst);
                    m.agent.agent_id != "a7"
                }
            })
            .await;
        assert_eq!(handled.load(Ordering::SeqCst), 20, "each once");
        let counts = channel.counts();
        assert_eq!((counts.most_at_once, counts.failed), (3, 1), "{counts:?}");
    }
}
