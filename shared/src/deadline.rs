//! A point in time by which an operation must have answered. Every call that may wait takes a
//! [`Deadline`] from its caller instead of inventing its own timeout: a Lambda has its remaining
//! time, an HTTP request its budget, and nothing may run past either.

use std::time::Duration;

use lambda_http::{Request, RequestExt};
use tokio::time::Instant;

/// Kept back from a Lambda's remaining time so the answer still gets out: work that ends
/// exactly at the deadline has no time left to say what it did.
pub const ANSWER_MARGIN: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline(Instant);

impl Deadline {
    pub fn after(budget: Duration) -> Self {
        Deadline(Instant::now() + budget)
    }

    pub fn at(instant: Instant) -> Self {
        Deadline(instant)
    }

    pub fn instant(self) -> Instant {
        self.0
    }

    pub fn remaining(self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    pub fn is_past(self) -> bool {
        self.remaining().is_zero()
    }

    pub fn allows(self, wait: Duration) -> bool {
        Instant::now() + wait < self.0
    }

    /// The Lambda context's `deadline_ms` (epoch ms) less [`ANSWER_MARGIN`].
    pub fn for_invocation(deadline_ms: u64) -> Self {
        let left = deadline_ms.saturating_sub(crate::timestamp::now_ms());
        Deadline::after(Duration::from_millis(left).saturating_sub(ANSWER_MARGIN))
    }

    /// `budget` (what the route allows itself), cut to its Lambda's remaining time less
    /// [`ANSWER_MARGIN`]; served locally, the budget alone.
    pub fn for_request(request: &Request, budget: Duration) -> Self {
        let own = Deadline::after(budget);
        match request.lambda_context_ref() {
            Some(ctx) => own.min(Deadline::for_invocation(ctx.deadline)),
            None => own,
        }
    }

    /// The deadline in epoch ms, as a record keeps it (a poll lease until the caller's deadline).
    pub fn epoch_ms(self) -> u64 {
        crate::timestamp::now_ms() + self.remaining().as_millis() as u64
    }

    pub fn min_after(self, budget: Duration) -> Self {
        self.min(Deadline::after(budget))
    }
}

/// API Gateway cuts HTTP requests at 30 s; [`ANSWER_MARGIN`] of that is kept for the answer.
pub const REQUEST_BUDGET: Duration = Duration::from_secs(28);

/// A request's two limits (docs/wake-protocol.md, "Short requests"): `work`, by which it answers
/// (every store and AgentKit call takes its timeout from it), and `wait`, never later, until
/// which it may wait on others. A `wait` already past means "do your own step, then answer".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub work: Deadline,
    pub wait: Deadline,
}

impl Budget {
    pub fn new(work: Deadline, wait: Duration) -> Self {
        Budget {
            work,
            wait: work.min_after(wait),
        }
    }

    /// [`REQUEST_BUDGET`] cut as [`Deadline::for_request`] does, waiting at most `wait`.
    pub fn for_request(request: &Request, wait: Duration) -> Self {
        Budget::new(Deadline::for_request(request, REQUEST_BUDGET), wait)
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

    /// Sleep the next pause if `until` allows it whole (and `also` after); else `false` at once.
    pub async fn wait(&mut self, until: Deadline, also: Duration) -> bool {
        if !until.allows(self.next + also) {
            return false;
        }
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 3 / 2).min(self.max);
        true
    }
}

/// How often AgentKit is asked about work in progress (docs/wake-protocol.md, "Short
/// requests"): every `min` at first, then a quarter of the time taken so far, up to `max`. A
/// session Ready in 2 s is seen within half a second; a boot of minutes costs a call every
/// `max`. The holder and the poll lease share it, so calls never grow with the callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    pub min: Duration,
    pub max: Duration,
}

impl Pace {
    /// The pause before the next poll of work begun at `since_ms` (0: unknown, the shortest).
    pub fn gap(&self, since_ms: u64, now_ms: u64) -> Duration {
        let elapsed = Duration::from_millis(now_ms.saturating_sub(since_ms));
        let gap = if since_ms == 0 { self.min } else { elapsed / 4 };
        gap.clamp(self.min, self.max.max(self.min))
    }

    /// A 202's `Retry-After`: the pause rounded up to whole seconds, at least one.
    pub fn retry_after_s(&self, since_ms: u64, now_ms: u64) -> u64 {
        let gap = self.gap(since_ms, now_ms);
        gap.as_millis().div_ceil(1000).max(1) as u64
    }
}

#[cfg(test)]
mod pace_tests {
    use super::*;

    const PACE: Pace = Pace {
        min: Duration::from_millis(250),
        max: Duration::from_secs(2),
    };

    #[test]
    fn polls_are_close_early_and_spaced_out_later() {
        let t0 = 1_000_000;
        assert_eq!(PACE.gap(t0, t0), Duration::from_millis(250));
        assert_eq!(PACE.gap(t0, t0 + 1_000), Duration::from_millis(250));
        assert_eq!(PACE.gap(t0, t0 + 2_000), Duration::from_millis(500));
        assert_eq!(PACE.gap(t0, t0 + 60_000), Duration::from_secs(2));
        // Unknown start, or a clock that went back: the shortest pause.
        assert_eq!(PACE.gap(0, t0), Duration::from_millis(250));
        assert_eq!(PACE.gap(t0, t0 - 5), Duration::from_millis(250));
    }

    #[test]
    fn retry_after_is_whole_seconds_and_never_zero() {
        let t0 = 1_000_000;
        assert_eq!(PACE.retry_after_s(t0, t0), 1);
        assert_eq!(PACE.retry_after_s(t0, t0 + 5_000), 2);
        assert_eq!(PACE.retry_after_s(t0, t0 + 600_000), 2);
    }
}
