//! A point in time by which an operation must have answered.
//!
//! Every call that may wait (AgentKit retries, readiness polling) takes a [`Deadline`] from its
//! caller instead of inventing its own timeout: a Lambda has its remaining time, an HTTP request
//! its budget, and nothing may run past either.

use std::time::Duration;

use lambda_http::{Request, RequestExt};
use tokio::time::Instant;

/// Kept back from a Lambda's remaining time so that the answer still gets out: API Gateway
/// gives up at 30 s, an invoker at the function's timeout, and work that ends exactly at the
/// deadline has no time left to say what it did.
pub const ANSWER_MARGIN: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline(Instant);

impl Deadline {
    /// `budget` from now.
    pub fn after(budget: Duration) -> Self {
        Deadline(Instant::now() + budget)
    }

    pub fn at(instant: Instant) -> Self {
        Deadline(instant)
    }

    pub fn instant(self) -> Instant {
        self.0
    }

    /// Time left, zero once passed.
    pub fn remaining(self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    pub fn is_past(self) -> bool {
        self.remaining().is_zero()
    }

    /// Whether waiting `wait` would still leave time before the deadline.
    pub fn allows(self, wait: Duration) -> bool {
        Instant::now() + wait < self.0
    }

    /// An invocation's deadline: the Lambda context's `deadline_ms` (epoch ms) less
    /// [`ANSWER_MARGIN`].
    pub fn for_invocation(deadline_ms: u64) -> Self {
        let left = deadline_ms.saturating_sub(crate::timestamp::now_ms());
        Deadline::after(Duration::from_millis(left).saturating_sub(ANSWER_MARGIN))
    }

    /// An HTTP request's deadline: `budget` (what the route allows itself), cut to its
    /// Lambda's remaining time less [`ANSWER_MARGIN`]. Served locally (no Lambda context), the
    /// budget alone.
    pub fn for_request(request: &Request, budget: Duration) -> Self {
        let own = Deadline::after(budget);
        match request.lambda_context_ref() {
            Some(ctx) => own.min(Deadline::for_invocation(ctx.deadline)),
            None => own,
        }
    }

    /// The deadline on the wall clock, in epoch milliseconds: what a record keeps (a poll lease
    /// taken until the caller's deadline).
    pub fn epoch_ms(self) -> u64 {
        crate::timestamp::now_ms() + self.remaining().as_millis() as u64
    }

    /// The earlier of this deadline and `budget` from now.
    pub fn min_after(self, budget: Duration) -> Self {
        self.min(Deadline::after(budget))
    }
}

/// The pause of every wait loop of a wake or a sleep (polling AgentKit, watching the record):
/// it starts at `min`, grows by half each time up to `max`, and never sleeps past a deadline.
#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Self {
        Backoff { next: min, max }
    }

    /// Sleep the next pause, if `until` allows it whole (and `also` after it); `false`, without
    /// sleeping, when it does not: the loop's budget is spent.
    pub async fn wait(&mut self, until: Deadline, also: Duration) -> bool {
        if !until.allows(self.next + also) {
            return false;
        }
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 3 / 2).min(self.max);
        true
    }
}
