//! AgentKit's rate limits: per action, account-wide (every caller of the simulator shares
//! them), each a sliding one-second window. CreateTool and UpdateTool share one limit, the
//! Tool writes; every other action has its own.
//!
//! The callers' time (tokio's `Instant`), not the simulated clock: the callers under test pace
//! themselves on it too (real time, or a simulated deployment's paused tokio clock). Only
//! requests a limit *accepted* enter its window, so a client hammering the API while throttled
//! is not punished further (a refused request did no work); the window is kept also when a
//! limit is off, so "the most in any one second" tells what a client would have done to the
//! real service.
//!
//! Which limits there are and their assumed numbers are snapwake's own
//! (`snapwake::agentkit::port`): the budget that paces snapwake's calls reads the same ones.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use serde::{Deserialize, Serialize};
pub use snapwake::agentkit::port::{limit_of, RateLimits, DEFAULT_TOOL_WRITE_LIMIT, TOOL_WRITES};

const WINDOW: Duration = Duration::from_secs(1);

/// The environment variable the test harness and `snapwake sim`/`serve` read a
/// [`RateLimits`] from.
pub const RATE_LIMITS_ENV: &str = "SNAPWAKE_SIM_RATE_LIMITS";

/// Whether `name` can be limited: an AgentKit action, or [`TOOL_WRITES`].
pub(crate) fn is_limit(name: &str) -> bool {
    name == TOOL_WRITES || crate::actions::lookup(name).is_some()
}

/// The simulator's limits: [`RateLimits::parse`] over every action it serves.
pub fn parse(text: &str) -> Result<RateLimits, String> {
    RateLimits::parse(text, is_limit)
}

/// The limits [`RATE_LIMITS_ENV`] names, else the simulator's default: the Tool writes only,
/// the simulator as every suite knew it before the account-wide limits.
pub fn from_env() -> Result<RateLimits, String> {
    match std::env::var(RATE_LIMITS_ENV) {
        Ok(text) => parse(&text).map_err(|e| format!("{RATE_LIMITS_ENV}: {e}")),
        Err(_) => Ok(RateLimits::tool_writes()),
    }
}

/// What one limit counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitCounters {
    /// Requests per second, or `None` when off.
    pub limit: Option<u32>,
    /// Requests the limit let through.
    pub accepted: u64,
    /// Requests refused with 429.
    pub refused: u64,
    /// The most accepted requests in any one-second window.
    pub most_in_a_second: u32,
}

/// One limit's sliding window.
#[derive(Debug, Default)]
struct Window {
    accepted: VecDeque<Instant>,
    counters: LimitCounters,
    /// Requests before this instant still throttle but no longer count toward
    /// `most_in_a_second` (set by a counter reset).
    counted_since: Option<Instant>,
}

impl Window {
    /// Admit a request at `now` under `limit`, or refuse it with the whole seconds to wait.
    fn admit(&mut self, limit: Option<u32>, now: Instant) -> Result<(), u64> {
        while self
            .accepted
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            self.accepted.pop_front();
        }
        if let Some(limit) = limit {
            if self.accepted.len() >= limit as usize {
                self.counters.refused += 1;
                let waited = self.accepted.front().map(|t| now.duration_since(*t));
                let wait = WINDOW.saturating_sub(waited.unwrap_or_default());
                return Err(wait.as_secs_f64().ceil().max(1.0) as u64);
            }
        }
        self.accepted.push_back(now);
        self.counters.accepted += 1;
        // A window ending at an accepted request holds the most, so this is the maximum over
        // every sliding window.
        let counted = match self.counted_since {
            None => self.accepted.len(),
            Some(since) => self.accepted.iter().filter(|t| **t >= since).count(),
        };
        self.counters.most_in_a_second = self.counters.most_in_a_second.max(counted as u32);
        Ok(())
    }
}

/// The limits in force and their windows.
#[derive(Debug)]
pub(crate) struct Limiter {
    pub(crate) limits: RateLimits,
    windows: BTreeMap<String, Window>,
}

impl Limiter {
    pub(crate) fn new(limits: RateLimits) -> Self {
        Limiter {
            limits,
            windows: BTreeMap::new(),
        }
    }

    /// Admit a request of `action` at `now`, or refuse it with the seconds to wait (≥ 1).
    pub(crate) fn admit(&mut self, action: &str, now: Instant) -> Result<(), u64> {
        let limit = limit_of(action);
        let per_second = self.limits.0.get(limit).copied();
        self.windows
            .entry(limit.to_string())
            .or_default()
            .admit(per_second, now)
    }

    /// What each limit counted since the last reset.
    pub(crate) fn counters(&self) -> BTreeMap<String, LimitCounters> {
        let mut all: BTreeMap<String, LimitCounters> = self
            .windows
            .iter()
            .map(|(name, w)| (name.clone(), w.counters.clone()))
            .collect();
        for name in self.limits.0.keys() {
            all.entry(name.clone()).or_default();
        }
        for (name, c) in &mut all {
            c.limit = self.limits.0.get(name).copied();
        }
        all
    }

    pub(crate) fn reset_counters(&mut self) {
        let now = Instant::now();
        for w in self.windows.values_mut() {
            w.counters = LimitCounters::default();
            w.counted_since = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fourth_tool_write_in_a_second_is_refused_and_the_window_slides() {
        let mut l = Limiter::new(RateLimits::tool_writes());
        let t0 = Instant::now();
        for (i, action) in ["CreateTool", "UpdateTool", "CreateTool"]
            .iter()
            .enumerate()
        {
            assert!(l
                .admit(action, t0 + Duration::from_millis(i as u64 * 100))
                .is_ok());
        }
        assert_eq!(
            l.admit("UpdateTool", t0 + Duration::from_millis(300)),
            Err(1)
        );
        // Reads are not limited by default.
        for _ in 0..100 {
            assert!(l.admit("GetSession", t0).is_ok());
        }
        // At 1.0 s the first write left the window.
        assert!(l
            .admit("CreateTool", t0 + Duration::from_millis(1000))
            .is_ok());
        let c = l.counters();
        assert_eq!(c[TOOL_WRITES].most_in_a_second, 3);
        assert_eq!(c[TOOL_WRITES].refused, 1);
        assert_eq!(c[TOOL_WRITES].limit, Some(3));
        assert_eq!(c["GetSession"].limit, None);
        assert_eq!(c["GetSession"].most_in_a_second, 100);
    }

    #[test]
    fn each_action_has_a_window_of_its_own() {
        let limits = RateLimits::agentkit().with("ResumeSessionFromSnapshot", Some(2));
        let mut l = Limiter::new(limits);
        let t0 = Instant::now();
        assert!(l.admit("ResumeSessionFromSnapshot", t0).is_ok());
        assert!(l.admit("ResumeSessionFromSnapshot", t0).is_ok());
        assert_eq!(l.admit("ResumeSessionFromSnapshot", t0), Err(1));
        // Another action's window is untouched by the Resumes.
        for _ in 0..20 {
            assert!(l.admit("CreateSession", t0).is_ok());
        }
        assert_eq!(l.admit("CreateSession", t0), Err(1));
        let late = t0 + Duration::from_millis(1000);
        assert!(l.admit("ResumeSessionFromSnapshot", late).is_ok());
    }

    #[test]
    fn a_reset_zeroes_the_counts_but_not_the_window() {
        let mut l = Limiter::new(RateLimits::off().with("GetSession", Some(2)));
        let t0 = Instant::now();
        l.admit("GetSession", t0).unwrap();
        l.admit("GetSession", t0).unwrap();
        l.reset_counters();
        assert_eq!(l.admit("GetSession", Instant::now()), Err(1));
        let c = &l.counters()["GetSession"];
        assert_eq!((c.accepted, c.refused, c.most_in_a_second), (0, 1, 0));
    }
}
