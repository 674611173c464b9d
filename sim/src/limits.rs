//! AgentKit's rate limits: per action, account-wide (every caller of the simulator shares
//! them), each a sliding one-second window. CreateTool and UpdateTool share one limit, the
//! Tool writes; every other action has its own.
//!
//! Real time (`Instant`), not the simulated clock: the callers under test pace themselves on
//! real time too. Only requests a limit *accepted* enter its window, so a client hammering the
//! API while throttled is not punished further (a refused request did no work); the window is
//! kept also when a limit is off, so "the most in any one second" tells what a client would
//! have done to the real service.
//!
//! The numbers are not published; the defaults of [`RateLimits::agentkit`] are assumptions,
//! written down in docs/agentkit.md, *Rate limits*.

use std::collections::{BTreeMap, VecDeque};
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

const WINDOW: Duration = Duration::from_secs(1);

/// The one limit CreateTool and UpdateTool share.
pub const TOOL_WRITES: &str = "ToolWrites";

/// Tool writes per second: observed at about 3.
pub const DEFAULT_TOOL_WRITE_LIMIT: u32 = 3;

/// The environment variable the test harness and `snapwake sim`/`serve` read a
/// [`RateLimits`] from.
pub const RATE_LIMITS_ENV: &str = "SNAPWAKE_SIM_RATE_LIMITS";

/// The limit an action counts against: its own, or the Tool writes' for CreateTool and
/// UpdateTool.
pub fn limit_of(action: &str) -> &str {
    match action {
        "CreateTool" | "UpdateTool" => TOOL_WRITES,
        other => other,
    }
}

/// Whether `name` can be limited: an AgentKit action, or [`TOOL_WRITES`].
pub(crate) fn is_limit(name: &str) -> bool {
    name == TOOL_WRITES || crate::actions::lookup(name).is_some()
}

/// Requests per second per limit ([`limit_of`]); a limit not named is off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimits(pub BTreeMap<String, u32>);

impl Default for RateLimits {
    /// Only the Tool writes: the simulator as every suite knew it before the account-wide
    /// limits ([`RateLimits::agentkit`] turns them all on).
    fn default() -> Self {
        RateLimits::tool_writes()
    }
}

impl RateLimits {
    /// No limit at all.
    pub fn off() -> Self {
        RateLimits(BTreeMap::new())
    }

    /// Only CreateTool+UpdateTool, 3 per second.
    pub fn tool_writes() -> Self {
        RateLimits::off().with(TOOL_WRITES, Some(DEFAULT_TOOL_WRITE_LIMIT))
    }

    /// Every action limited as AgentKit is assumed to limit it: the session writes
    /// (CreateSession, Resume, snapshots, DeleteSession, SetSessionTtl) 20 per second, the
    /// reads and listings 50, the Tool writes 3.
    pub fn agentkit() -> Self {
        let writes = [
            "CreateSession",
            "ResumeSessionFromSnapshot",
            "CreateSessionSnapshot",
            "DeleteSession",
            "DeleteSessionSnapshot",
            "SetSessionTtl",
        ];
        let reads = [
            "GetSession",
            "ListSessions",
            "ListSessionSnapshots",
            "GetSessionSnapshot",
            "ListTools",
            "GetTool",
        ];
        let mut limits = RateLimits::tool_writes();
        for action in writes {
            limits = limits.with(action, Some(20));
        }
        for action in reads {
            limits = limits.with(action, Some(50));
        }
        limits
    }

    /// These limits with `limit` (an action, or [`TOOL_WRITES`]) at `per_second` (`None`: off).
    pub fn with(mut self, limit: &str, per_second: Option<u32>) -> Self {
        self.set(limit, per_second);
        self
    }

    /// Set `limit` (an action, or [`TOOL_WRITES`]) to `per_second` (`None`: off).
    pub fn set(&mut self, limit: &str, per_second: Option<u32>) {
        match per_second {
            Some(n) => self.0.insert(limit_of(limit).to_string(), n),
            None => self.0.remove(limit_of(limit)),
        };
    }

    /// The limits [`RATE_LIMITS_ENV`] names, else the default (the Tool writes only).
    pub fn from_env() -> Result<Self, String> {
        match std::env::var(RATE_LIMITS_ENV) {
            Ok(text) => text.parse().map_err(|e| format!("{RATE_LIMITS_ENV}: {e}")),
            Err(_) => Ok(RateLimits::default()),
        }
    }
}

impl FromStr for RateLimits {
    type Err = String;

    /// `agentkit`, `tools` or `off`, then any number of `,Action=N` or `,Action=off`:
    /// `agentkit,ResumeSessionFromSnapshot=50`.
    fn from_str(text: &str) -> Result<Self, String> {
        let mut parts = text.split(',').map(str::trim);
        let mut limits = match parts.next().unwrap_or_default() {
            "agentkit" => RateLimits::agentkit(),
            "tools" | "" => RateLimits::tool_writes(),
            "off" => RateLimits::off(),
            other => {
                return Err(format!(
                    "{other:?} is not agentkit, tools or off (then Action=N, ...)"
                ))
            }
        };
        for part in parts.filter(|p| !p.is_empty()) {
            let (action, n) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?} is not Action=N or Action=off"))?;
            if !is_limit(action) {
                return Err(format!("{action:?} is not an AgentKit action"));
            }
            let per_second = match n {
                "off" => None,
                n => Some(
                    n.parse()
                        .map_err(|_| format!("{n:?} is not a number of requests per second"))?,
                ),
            };
            limits = limits.with(action, per_second);
        }
        Ok(limits)
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
        let mut l = Limiter::new(RateLimits::default());
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

    #[test]
    fn limits_read_from_text() {
        assert_eq!("tools".parse::<RateLimits>(), Ok(RateLimits::tool_writes()));
        assert_eq!("off".parse::<RateLimits>(), Ok(RateLimits::off()));
        let l: RateLimits = "agentkit, ResumeSessionFromSnapshot=5, GetSession=off"
            .parse()
            .unwrap();
        assert_eq!(l.0.get("ResumeSessionFromSnapshot"), Some(&5));
        assert_eq!(l.0.get("GetSession"), None);
        assert_eq!(l.0.get("ListSessions"), Some(&50));
        assert_eq!(l.0.get(TOOL_WRITES), Some(&3));
        let l: RateLimits = "off,UpdateTool=7".parse().unwrap();
        assert_eq!(l.0.get(TOOL_WRITES), Some(&7));
        for bad in [
            "fast",
            "agentkit,Resume=5",
            "agentkit,GetSession",
            "off,GetSession=x",
        ] {
            assert!(bad.parse::<RateLimits>().is_err(), "{bad}");
        }
    }
}
