//! Which of an agent's snapshots the retention sweep deletes (docs/operations.md, "The
//! retention sweep"): a pure rule, tested at fixed instants.
//!
//! - **count**: the newest `keep` Ready snapshots stay, older Ready ones go;
//! - **age** (when a maximum age is set): any snapshot older than it goes too;
//! - never the newest Ready snapshot of an agent without a live session: an asleep agent
//!   always keeps its way back, whatever the age;
//! - a snapshot whose `CreatedAt` cannot be read is never deleted (its age is unknown), and
//!   times are compared as instants, never as text.

use std::time::Duration;

use snapwake::agentkit::types::Snapshot;
use snapwake::config::RetentionConfig;

/// What the sweep keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// The newest Ready snapshots kept per agent (at least 1).
    pub keep: usize,
    /// Snapshots older than this go too.
    pub max_age: Option<Duration>,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        RetentionConfig::default().into()
    }
}

impl From<RetentionConfig> for RetentionPolicy {
    fn from(c: RetentionConfig) -> Self {
        RetentionPolicy {
            keep: c.keep_snapshots.max(1),
            max_age: c
                .max_age_days
                .map(|d| Duration::from_secs(d.saturating_mul(24 * 3600))),
        }
    }
}

impl RetentionPolicy {
    /// The snapshots of one agent to delete at `now_ms`, oldest first. `awake`: the agent has
    /// a live session.
    pub fn to_prune<'s>(
        &self,
        snapshots: &'s [Snapshot],
        awake: bool,
        now_ms: u64,
    ) -> Vec<&'s Snapshot> {
        let mut dated: Vec<(u64, &Snapshot)> = snapshots
            .iter()
            .filter(|s| s.snapshot_id.is_some())
            .filter_map(|s| {
                let at = s
                    .created_at
                    .as_deref()
                    .and_then(snapwake::timestamp::epoch_ms)?;
                Some((at, s))
            })
            .collect();
        // Newest first; ties by id, so the rule is the same on every run.
        dated.sort_by(|(a, sa), (b, sb)| b.cmp(a).then(sa.snapshot_id.cmp(&sb.snapshot_id)));
        let ready: Vec<&(u64, &Snapshot)> = dated.iter().filter(|(_, s)| s.is_wakeable()).collect();
        let protected = (!awake)
            .then(|| ready.first().and_then(|(_, s)| s.snapshot_id.as_deref()))
            .flatten();
        let by_count = ready.iter().skip(self.keep).map(|(_, s)| *s);
        let too_old = |at: u64| {
            self.max_age
                .is_some_and(|age| at.saturating_add(age.as_millis() as u64) < now_ms)
        };
        let by_age = dated.iter().filter(|(at, _)| too_old(*at)).map(|(_, s)| *s);
        let mut out: Vec<&Snapshot> = Vec::new();
        for s in by_count.chain(by_age) {
            let id = s.snapshot_id.as_deref();
            if id == protected || out.iter().any(|o| o.snapshot_id.as_deref() == id) {
                continue;
            }
            out.push(s);
        }
        out.sort_by_key(|s| snapwake::timestamp::sort_key(s.created_at.as_deref()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: u64 = 24 * 3600 * 1000;
    /// 2026-12-10T00:00:00Z
    const NOW: u64 = 1_796_860_800_000;

    fn snap(id: &str, status: &str, days_ago: u64) -> Snapshot {
        Snapshot {
            snapshot_id: Some(id.into()),
            status: Some(status.into()),
            created_at: Some(snapwake::timestamp::format_ms(NOW - days_ago * DAY_MS)),
            ..Snapshot::default()
        }
    }

    fn ids(pruned: Vec<&Snapshot>) -> Vec<&str> {
        pruned
            .into_iter()
            .filter_map(|s| s.snapshot_id.as_deref())
            .collect()
    }

    #[test]
    fn the_newest_three_ready_snapshots_stay() {
        let policy = RetentionPolicy::default();
        let snaps: Vec<Snapshot> = (1..=6)
            .map(|d| snap(&format!("s{d}"), "Ready", d))
            .collect();
        assert_eq!(ids(policy.to_prune(&snaps, false, NOW)), ["s6", "s5", "s4"]);
        // Three or fewer: nothing to do.
        assert!(policy.to_prune(&snaps[..3], false, NOW).is_empty());
    }

    #[test]
    fn snapshots_that_are_not_ready_do_not_count_and_are_not_counted_out() {
        let policy = RetentionPolicy::default();
        let snaps = vec![
            snap("creating", "Creating", 0),
            snap("r1", "Ready", 1),
            snap("failed", "Failed", 2),
            snap("r2", "Ready", 3),
            snap("r3", "Ready", 4),
            snap("r4", "Ready", 5),
        ];
        assert_eq!(ids(policy.to_prune(&snaps, false, NOW)), ["r4"]);
    }

    #[test]
    fn old_snapshots_go_but_never_the_only_way_back_of_an_asleep_agent() {
        let policy = RetentionPolicy {
            keep: 3,
            max_age: Some(Duration::from_secs(30 * 24 * 3600)),
        };
        let snaps = vec![
            snap("recent", "Ready", 10),
            snap("old", "Ready", 40),
            snap("older", "Failed", 50),
        ];
        assert_eq!(ids(policy.to_prune(&snaps, false, NOW)), ["older", "old"]);
        // All of them old: the newest Ready one stays while the agent is asleep...
        let ancient = vec![snap("a1", "Ready", 100), snap("a2", "Ready", 200)];
        assert_eq!(ids(policy.to_prune(&ancient, false, NOW)), ["a2"]);
        // ...and goes when the agent is awake (its live session is its state now).
        assert_eq!(ids(policy.to_prune(&ancient, true, NOW)), ["a2", "a1"]);
    }

    #[test]
    fn times_are_instants_and_unreadable_ones_are_never_pruned() {
        let policy = RetentionPolicy {
            keep: 1,
            max_age: None,
        };
        let mut a = snap("a", "Ready", 0);
        // The same instant as text would sort before "…Z" of an earlier time.
        a.created_at = Some("2026-12-10T02:00:00+02:00".into());
        let b = snap("b", "Ready", 1);
        let mut c = snap("c", "Ready", 2);
        c.created_at = Some("last week".into());
        let snaps = [b, a, c];
        assert_eq!(ids(policy.to_prune(&snaps, false, NOW)), ["b"]);
    }
}
