//! What the simulator counts, for assertions and benchmarks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Requests of one action.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionCounters {
    /// Requests whose signature verified and whose `Action` is known (whatever came next:
    /// a bad version, the throttle, a fault, a validation error).
    pub received: u64,
    /// Requests answered with a `Result` (HTTP 200).
    pub succeeded: u64,
}

/// A snapshot of every counter. `live_sessions` is the current state of the world, not a
/// counter, so [`super::SimControl::reset_counters`] leaves it alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Per action name.
    pub actions: BTreeMap<String, ActionCounters>,
    /// ResumeSessionFromSnapshot successes per SnapshotId (kept after the snapshot is gone).
    pub resumes: BTreeMap<String, u64>,
    /// Active, unexpired sessions per UserSessionId (only ids with at least one).
    pub live_sessions: BTreeMap<String, u64>,
    /// The most CreateTool+UpdateTool requests their limit accepted in any one-second window.
    pub max_tool_writes_per_second: u32,
    /// Requests refused with 429 by any rate limit (injected 429s are not counted here).
    pub throttled: u64,
    /// Per rate limit (an action, or `ToolWrites`): its limit, what it accepted and refused,
    /// and the most it accepted in any one second.
    #[serde(default)]
    pub limits: BTreeMap<String, crate::limits::LimitCounters>,
    /// Requests refused with 401 (bad, missing or expired signature, wrong security token).
    pub signature_failures: u64,
    /// Injected faults that answered an error.
    pub faults_fired: u64,
    /// Injected faults met, by sort: `429`, `error before acting`, `error after acting`,
    /// `error, acted on later`, `latency >= 1 s`.
    #[serde(default)]
    pub faults_by_kind: BTreeMap<String, u64>,
    /// Actions carried out late (`Fault::apply_after`), by action.
    #[serde(default)]
    pub late_applied: BTreeMap<String, u64>,
}

impl Counters {
    /// Requests of `action` received (0 when none).
    pub fn received(&self, action: &str) -> u64 {
        self.actions.get(action).map_or(0, |a| a.received)
    }

    /// Requests of `action` that succeeded (0 when none).
    pub fn succeeded(&self, action: &str) -> u64 {
        self.actions.get(action).map_or(0, |a| a.succeeded)
    }

    /// Resumes the snapshot got (0 when none).
    pub fn resumes_of(&self, snapshot_id: &str) -> u64 {
        self.resumes.get(snapshot_id).copied().unwrap_or(0)
    }

    /// What the rate limit of `action` counted (zeros when it saw nothing).
    pub fn limit(&self, action: &str) -> crate::limits::LimitCounters {
        let name = crate::limits::limit_of(action);
        self.limits.get(name).cloned().unwrap_or_default()
    }

    /// Live sessions of a UserSessionId (0 when none).
    pub fn live_sessions_of(&self, user_session_id: &str) -> u64 {
        self.live_sessions
            .get(user_session_id)
            .copied()
            .unwrap_or(0)
    }
}
