//! The one rate limiter every CreateTool and UpdateTool of a deploy run passes: at most 3 per
//! second, evenly spaced (a token bucket would allow a burst), shared by all the run's tasks.
//!
//! Slots are spaced at the sender, but a write delayed on the way can land close to the next,
//! so each write also holds one of 3 permits until a second after its answer: AgentKit accepts a
//! write between sending and answer, so any four accepted writes are a second apart.
//!
//! A throttle means someone else shares the account's quota: the next slot moves past
//! `Retry-After` (or one second per attempt) and the write is retried in a fresh slot.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::sync::Arc;

use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tracing::Instrument;

use snapwake::agentkit::types::Action;
use snapwake::agentkit::{AgentKit, AgentKitError};
use snapwake::invocation::Deadline;

/// The spacing of 3 writes per second, rounded up so three never fit in one second.
pub const WRITE_SPACING: Duration = Duration::from_millis(334);

pub const WRITES_PER_WINDOW: usize = 3;
/// The throttle's window: a permit is held this long after its write's answer.
const WINDOW: Duration = Duration::from_secs(1);

/// How many times a throttled write is tried in all.
pub const MAX_WRITE_ATTEMPTS: u32 = 5;

#[derive(Debug, Clone, thiserror::Error)]
pub enum WriteError {
    /// No slot (or no retry) fits before the deadline: nothing was sent for it.
    #[error("no write slot before the deadline")]
    NoTime,
    #[error(transparent)]
    AgentKit(#[from] AgentKitError),
}

/// A write's place: its start instant and a permit, released one window after the slot is
/// dropped (drop it when the write has its answer).
#[derive(Debug)]
pub struct Slot {
    pub at: Instant,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                // In the invocation's span, so a line logged here carries its ids.
                runtime.spawn(
                    async move {
                        tokio::time::sleep(WINDOW).await;
                        drop(permit);
                    }
                    .in_current_span(),
                );
            }
        }
    }
}

#[derive(Debug)]
pub struct WriteLimiter {
    spacing: Duration,
    permits: Arc<Semaphore>,
    next: Mutex<Instant>,
    writes: AtomicU64,
    throttles: AtomicU64,
}

impl Default for WriteLimiter {
    fn default() -> Self {
        WriteLimiter::new(WRITE_SPACING)
    }
}

impl WriteLimiter {
    pub fn new(spacing: Duration) -> Self {
        WriteLimiter {
            spacing,
            permits: Arc::new(Semaphore::new(WRITES_PER_WINDOW)),
            next: Mutex::new(Instant::now()),
            writes: AtomicU64::new(0),
            throttles: AtomicU64::new(0),
        }
    }

    /// Wait for a permit and the next free slot; `Err(NoTime)`, taking nothing, past `deadline`.
    pub async fn acquire(&self, deadline: Deadline) -> Result<Slot, WriteError> {
        let permit =
            tokio::time::timeout_at(deadline.instant(), self.permits.clone().acquire_owned())
                .await
                .map_err(|_| WriteError::NoTime)?
                .map_err(|_| WriteError::NoTime)?;
        let at = {
            let mut next = self.next.lock().await;
            let at = (*next).max(Instant::now());
            if at >= deadline.instant() {
                // Not a write: give the permit back at once.
                drop(permit);
                return Err(WriteError::NoTime);
            }
            *next = at + self.spacing;
            at
        };
        tokio::time::sleep_until(at).await;
        Ok(Slot {
            at,
            permit: Some(permit),
        })
    }

    /// Keep every slot clear of the next `wait` (a throttle answered by AgentKit).
    async fn hold_off(&self, wait: Duration) {
        let mut next = self.next.lock().await;
        *next = (*next).max(Instant::now() + wait);
    }

    /// Send the tool write `request` in its own slot; retry a throttle with a fresh slot.
    pub async fn write<K: AgentKit, A: Action + 'static>(
        &self,
        agentkit: &K,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> Result<A::Output, WriteError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let slot = self.acquire(deadline).await?;
            let answer = agentkit.call(region, request, deadline).await;
            drop(slot);
            match answer {
                Ok(out) => {
                    self.writes.fetch_add(1, Ordering::Relaxed);
                    return Ok(out);
                }
                Err(AgentKitError::Throttled { retry_after, .. }) => {
                    self.throttles.fetch_add(1, Ordering::Relaxed);
                    let wait = retry_after.unwrap_or(Duration::from_secs(u64::from(attempt)));
                    tracing::info!(
                        action = A::NAME,
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        "tool write throttled by AgentKit; waiting"
                    );
                    if attempt >= MAX_WRITE_ATTEMPTS || !deadline.allows(wait) {
                        return Err(WriteError::AgentKit(AgentKitError::Throttled {
                            action: A::NAME,
                            retry_after,
                        }));
                    }
                    self.hold_off(wait).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    pub fn throttles(&self) -> u64 {
        self.throttles.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// With the clock paused, time only moves when every task sleeps, so slots are exact.
    #[tokio::test(start_paused = true)]
    async fn concurrent_acquisitions_are_evenly_spaced_without_burst() {
        let limiter = Arc::new(WriteLimiter::default());
        let deadline = Deadline::after(Duration::from_secs(60));
        let tasks: Vec<_> = (0..9)
            .map(|_| {
                let l = limiter.clone();
                tokio::spawn(async move { l.acquire(deadline).await.unwrap().at })
            })
            .collect();
        let mut slots = Vec::new();
        for t in tasks {
            slots.push(t.await.unwrap());
        }
        slots.sort();
        for pair in slots.windows(2) {
            assert!(
                pair[1] - pair[0] >= WRITE_SPACING,
                "{:?}",
                pair[1] - pair[0]
            );
        }
        // No one-second window holds more than 3.
        for (i, s) in slots.iter().enumerate() {
            let in_window = slots[i..]
                .iter()
                .filter(|t| **t - *s < Duration::from_secs(1))
                .count();
            assert!(in_window <= 3);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn no_slot_past_the_deadline() {
        let limiter = WriteLimiter::default();
        let deadline = Deadline::after(Duration::from_millis(500));
        drop(limiter.acquire(deadline).await.unwrap());
        drop(limiter.acquire(deadline).await.unwrap());
        assert!(matches!(
            limiter.acquire(deadline).await,
            Err(WriteError::NoTime)
        ));
    }
}
