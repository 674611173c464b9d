//! Which of an agent's snapshots the retention sweep deletes, and when a whole agent has been
//! idle long enough to go (docs/operations.md, "The retention sweep"): pure rules, tested at
//! fixed instants.
//!
//! - **the way back is never pruned**: the newest Ready snapshot of an agent, and every
//!   snapshot newer than it (`Creating` ones, which may become the next way back, included),
//!   are kept by every rule, whether the agent is awake or asleep. An agent with no Ready
//!   snapshot at all keeps everything: the newest of them may still become one;
//! - **count**: of the older Ready snapshots, the newest `keep - 1` stay (so `keep` Ready in
//!   all), older ones go;
//! - **age** (when a maximum age is set): any unprotected snapshot older than it goes too;
//! - a snapshot whose `CreatedAt` cannot be read is never deleted (its age is unknown), and
//!   times are compared as instants, never as text; two snapshots of the same second are
//!   ordered as the listing orders them (the one listed later is the newer, as the wake reads
//!   them);
//! - **idle**: an agent with no live session whose newest snapshot (any status) is older than
//!   the maximum idle time is deleted as a whole, exactly as `DELETE /v1/agents/...` does —
//!   never pruned down to a record with nothing to wake.
//!
//! The sweep applies [`RetentionPolicy::to_prune`] twice: on the pass's listing, to find the
//! agents worth locking, and again under the agent's lock on a fresh listing of that agent,
//! which alone decides what is deleted (a wake, a sleep or an expiry since the pass's listing
//! changes which snapshot is the way back).

use std::time::Duration;

use snapwake::agentkit::types::Snapshot;
use snapwake::config::RetentionConfig;

/// What the sweep keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// The newest Ready snapshots kept per agent (at least 1).
    pub keep: usize,
    /// Unprotected snapshots older than this go too.
    pub max_age: Option<Duration>,
    /// An agent idle longer than this is deleted as a whole.
    pub max_idle: Option<Duration>,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        RetentionConfig::default().into()
    }
}

fn days(d: Option<u64>) -> Option<Duration> {
    d.map(|d| Duration::from_secs(d.saturating_mul(24 * 3600)))
}

impl From<RetentionConfig> for RetentionPolicy {
    fn from(c: RetentionConfig) -> Self {
        RetentionPolicy {
            keep: c.keep_snapshots.max(1),
            max_age: days(c.max_age_days),
            max_idle: days(c.max_idle_days),
        }
    }
}

/// The snapshots with a readable `CreatedAt`, newest first (the later-listed first within a
/// second).
fn dated(snapshots: &[Snapshot]) -> Vec<(u64, &Snapshot)> {
    let mut dated: Vec<(usize, u64, &Snapshot)> = snapshots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.snapshot_id.is_some())
        .filter_map(|(i, s)| {
            let at = s
                .created_at
                .as_deref()
                .and_then(snapwake::ambient::epoch_ms)?;
            Some((i, at, s))
        })
        .collect();
    // Whole seconds: within one, the listing's order (later listed is newer).
    dated.sort_by(|(ia, a, _), (ib, b, _)| b.cmp(a).then(ib.cmp(ia)));
    dated.into_iter().map(|(_, at, s)| (at, s)).collect()
}

impl RetentionPolicy {
    /// The snapshots of one agent to delete at `now_ms`, oldest first; `snapshots` in the
    /// order AgentKit listed them.
    pub fn to_prune<'s>(&self, snapshots: &'s [Snapshot], now_ms: u64) -> Vec<&'s Snapshot> {
        let dated = dated(snapshots);
        // The way back and everything newer: kept by every rule.
        let Some(way_back) = dated.iter().position(|(_, s)| s.is_wakeable()) else {
            return Vec::new();
        };
        let older = &dated[way_back + 1..];
        let too_old = |at: u64| {
            self.max_age
                .is_some_and(|age| at.saturating_add(age.as_millis() as u64) < now_ms)
        };
        let mut ready_kept = 1;
        let mut out: Vec<&Snapshot> = Vec::new();
        for (at, s) in older {
            let by_count = s.is_wakeable() && {
                ready_kept += 1;
                ready_kept > self.keep
            };
            if by_count || too_old(*at) {
                out.push(s);
            }
        }
        out.reverse();
        out
    }

    /// Whether an agent has been idle past the maximum idle time at `now_ms`: no live session
    /// (`live`), at least one snapshot, and every snapshot readably dated and older than it.
    pub fn is_idle(&self, snapshots: &[Snapshot], live: bool, now_ms: u64) -> bool {
        let Some(idle) = self.max_idle else {
            return false;
        };
        if live || snapshots.is_empty() {
            return false;
        }
        snapshots.iter().all(|s| {
            s.created_at
                .as_deref()
                .and_then(snapwake::ambient::epoch_ms)
                .is_some_and(|at| at.saturating_add(idle.as_millis() as u64) < now_ms)
        })
    }
}

#[cfg(test)]
mod tests;
