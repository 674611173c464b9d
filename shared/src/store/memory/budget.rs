//! AgentKit budget items in memory: the same slots and conditions as `dynamo/budget.rs`.

use crate::store::{Reserved, Slowdown};

/// One bucket: the earliest untaken slot and the last slowdown.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Bucket {
    next_at_ms: Option<u64>,
    slowdown: Option<Slowdown>,
}

impl Bucket {
    /// Take the earliest slot at or after `now_ms`, `interval_ms` on, unless past `latest_ms`.
    pub(super) fn reserve(&mut self, now_ms: u64, interval_ms: u64, latest_ms: u64) -> Reserved {
        let slowdown = self.slowdown;
        let at_ms = self.next_at_ms.map_or(now_ms, |next| next.max(now_ms));
        if at_ms > latest_ms {
            return Reserved::Full {
                free_at_ms: at_ms,
                slowdown,
            };
        }
        self.next_at_ms = Some(at_ms + interval_ms);
        Reserved::At { at_ms, slowdown }
    }

    /// Record `slowdown`, unless one was recorded within `min_gap_ms` before it.
    pub(super) fn slow_down(&mut self, slowdown: Slowdown, min_gap_ms: u64) {
        let recent = self
            .slowdown
            .is_some_and(|s| s.since_ms >= slowdown.since_ms.saturating_sub(min_gap_ms));
        if !recent {
            self.slowdown = Some(slowdown);
        }
    }
}
