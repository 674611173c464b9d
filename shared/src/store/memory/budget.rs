//! AgentKit budget items in memory: the same slots, the same conditions as DynamoDB's
//! (`dynamo/budget.rs`), each a step under the one lock.

use super::MemoryStore;
use crate::store::{BudgetStore, Reserved, Slowdown, StoreError};

/// One bucket: the earliest untaken slot and the last slowdown.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Bucket {
    next_at_ms: Option<u64>,
    slowdown: Option<Slowdown>,
}

impl BudgetStore for MemoryStore {
    async fn reserve(
        &self,
        bucket: &str,
        now_ms: u64,
        interval_ms: u64,
        latest_ms: u64,
    ) -> Result<Reserved, StoreError> {
        let mut tables = self.lock();
        let b = tables.budget.entry(bucket.to_string()).or_default();
        let slowdown = b.slowdown;
        let at_ms = b.next_at_ms.map_or(now_ms, |next| next.max(now_ms));
        if at_ms > latest_ms {
            return Ok(Reserved::Full {
                free_at_ms: at_ms,
                slowdown,
            });
        }
        b.next_at_ms = Some(at_ms + interval_ms);
        Ok(Reserved::At { at_ms, slowdown })
    }

    async fn slow_down(
        &self,
        bucket: &str,
        slowdown: Slowdown,
        min_gap_ms: u64,
    ) -> Result<(), StoreError> {
        let mut tables = self.lock();
        let b = tables.budget.entry(bucket.to_string()).or_default();
        let recent = b
            .slowdown
            .is_some_and(|s| s.since_ms >= slowdown.since_ms.saturating_sub(min_gap_ms));
        if !recent {
            b.slowdown = Some(slowdown);
        }
        Ok(())
    }
}
