//! When and how long to wait before retrying an AgentKit call. Only "not now" is retried (429,
//! 503, a throttling code, no answer). Waits grow exponentially with jitter, so callers freed by
//! one throttle do not return in lock step; a `Retry-After` wins; no wait passes the deadline.

use std::time::Duration;

use crate::deadline::Deadline;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (docs/agentkit.md, "Retries, throttling and deadlines": 2).
    pub max_retries: u32,
    /// The first backoff; doubled for each further retry.
    pub base: Duration,
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            base: Duration::from_millis(200),
            max_wait: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based): the service's `Retry-After` when it gave
    /// one, else a random wait in `[cap/2, cap]` with `cap = base * 2^retry`.
    pub fn wait(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_wait);
        }
        let cap = self
            .base
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_wait);
        let half = cap / 2;
        half + Duration::from_nanos(fastrand::u64(0..=(cap - half).as_nanos() as u64))
    }

    /// The wait before retry `retry`, or `None` when retries are spent or it would pass `deadline`.
    pub fn next_wait(
        &self,
        retry: u32,
        retry_after: Option<Duration>,
        deadline: Deadline,
    ) -> Option<Duration> {
        if retry >= self.max_retries {
            return None;
        }
        let wait = self.wait(retry, retry_after);
        deadline.allows(wait).then_some(wait)
    }
}

/// Parse a `Retry-After` header given in seconds (HTTP dates are not used by AgentKit).
pub fn parse_retry_after(value: Option<&str>) -> Option<Duration> {
    value?.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_with_jitter_and_respect_the_cap() {
        let p = RetryPolicy::default();
        for _ in 0..200 {
            let w0 = p.wait(0, None);
            assert!(w0 >= Duration::from_millis(100) && w0 <= Duration::from_millis(200));
            let w1 = p.wait(1, None);
            assert!(w1 >= Duration::from_millis(200) && w1 <= Duration::from_millis(400));
            assert!(p.wait(30, None) <= p.max_wait);
        }
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let p = RetryPolicy::default();
        assert_eq!(
            p.wait(0, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
        assert_eq!(p.wait(0, Some(Duration::from_secs(60))), p.max_wait);
    }

    #[tokio::test]
    async fn no_retry_past_the_budget_or_the_deadline() {
        let p = RetryPolicy::default();
        let far = Deadline::after(Duration::from_secs(60));
        assert!(p.next_wait(0, None, far).is_some());
        assert!(p.next_wait(1, None, far).is_some());
        assert!(p.next_wait(2, None, far).is_none(), "only 2 retries");
        let near = Deadline::after(Duration::from_millis(500));
        assert!(p.next_wait(0, Some(Duration::from_secs(1)), near).is_none());
    }

    #[test]
    fn retry_after_parses_seconds_only() {
        assert_eq!(parse_retry_after(Some("3")), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(Some(" 1 ")), Some(Duration::from_secs(1)));
        assert_eq!(
            parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
        assert_eq!(parse_retry_after(None), None);
    }
}
