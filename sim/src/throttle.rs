//! The tool-write throttle: CreateTool and UpdateTool share a sliding one-second window.
//!
//! Real time (`Instant`), not the simulated clock: the deploy rate limiter under test runs on
//! real time too. Only writes the throttle *accepted* enter the window, so a client hammering
//! the API while throttled is not punished further (a refused request did no work); the window
//! is also kept when the throttle is off, so the "max writes in any one second" counter tells
//! what a client would have done to the real service.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(1);

/// Default limit: AgentKit allows 3 tool writes per second.
pub const DEFAULT_TOOL_WRITE_LIMIT: u32 = 3;

#[derive(Debug)]
pub(crate) struct Throttle {
    /// Writes per window, or `None` when off.
    pub(crate) limit: Option<u32>,
    accepted: VecDeque<Instant>,
    /// The most accepted writes seen in any one-second window.
    pub(crate) max_in_window: u32,
    /// How many writes were refused with 429.
    pub(crate) throttled: u64,
    /// Writes before this instant still throttle but no longer count toward
    /// `max_in_window` (set by a counter reset).
    counted_since: Option<Instant>,
}

impl Throttle {
    pub(crate) fn new(limit: Option<u32>) -> Self {
        Throttle {
            limit,
            accepted: VecDeque::new(),
            max_in_window: 0,
            throttled: 0,
            counted_since: None,
        }
    }

    /// Admit a write at `now`, or refuse it with the whole seconds to wait (≥ 1).
    pub(crate) fn admit(&mut self, now: Instant) -> Result<(), u64> {
        while self
            .accepted
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            self.accepted.pop_front();
        }
        if let (Some(limit), Some(oldest)) = (self.limit, self.accepted.front()) {
            if self.accepted.len() >= limit as usize {
                self.throttled += 1;
                let wait = WINDOW.saturating_sub(now.duration_since(*oldest));
                return Err(wait.as_secs_f64().ceil().max(1.0) as u64);
            }
        }
        if self.limit == Some(0) {
            self.throttled += 1;
            return Err(1);
        }
        self.accepted.push_back(now);
        // A window ending at an accepted write holds the most writes, so this is the maximum
        // over every sliding window.
        let counted = match self.counted_since {
            None => self.accepted.len(),
            Some(since) => self.accepted.iter().filter(|t| **t >= since).count(),
        };
        self.max_in_window = self.max_in_window.max(counted as u32);
        Ok(())
    }

    pub(crate) fn reset_counters(&mut self) {
        self.max_in_window = 0;
        self.throttled = 0;
        self.counted_since = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fourth_write_in_a_second_is_refused_and_the_window_slides() {
        let mut t = Throttle::new(Some(3));
        let t0 = Instant::now();
        for i in 0..3 {
            assert!(t.admit(t0 + Duration::from_millis(i * 100)).is_ok());
        }
        assert_eq!(t.admit(t0 + Duration::from_millis(300)), Err(1));
        assert_eq!(t.throttled, 1);
        assert_eq!(t.max_in_window, 3);
        // At 1.0 s the first write left the window.
        assert!(t.admit(t0 + Duration::from_millis(1000)).is_ok());
        assert_eq!(t.max_in_window, 3);
    }

    #[test]
    fn off_still_counts_the_busiest_window() {
        let mut t = Throttle::new(None);
        let t0 = Instant::now();
        for i in 0..5 {
            assert!(t.admit(t0 + Duration::from_millis(i * 10)).is_ok());
        }
        assert_eq!(t.max_in_window, 5);
        assert_eq!(t.throttled, 0);
    }
}
