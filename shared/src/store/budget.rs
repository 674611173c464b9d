//! The budget store port: the items that keep the deployment's AgentKit budget
//! (docs/table.md, "The AgentKit budget"), one per limit and lane, each holding the earliest
//! slot nobody has taken yet and the slowdown AgentKit's last 429 put on it. Implemented by both
//! store adapters; `crate::budget` decides what to ask of it.

use std::future::Future;

use super::port::StoreError;

/// A slowdown AgentKit's throttling put on a bucket: its rate at `factor_permille` of the
/// configured one at `since_ms`, recovering from there (`crate::budget`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slowdown {
    pub factor_permille: u32,
    pub since_ms: u64,
}

/// What asking a bucket for a slot came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserved {
    /// The slot at `at_ms` (epoch ms) is the caller's.
    At {
        at_ms: u64,
        slowdown: Option<Slowdown>,
    },
    /// Every slot up to the caller's latest is taken; the first free one is at `free_at_ms`.
    /// Nothing was taken.
    Full {
        free_at_ms: u64,
        slowdown: Option<Slowdown>,
    },
}

impl Reserved {
    /// The slowdown the bucket carries.
    pub fn slowdown(&self) -> Option<Slowdown> {
        match self {
            Reserved::At { slowdown, .. } | Reserved::Full { slowdown, .. } => *slowdown,
        }
    }
}

pub trait BudgetStore: Send + Sync {
    /// Take the earliest free slot of `bucket`, `max(next free, now_ms)`, if it is no later
    /// than `latest_ms`, and move the next free slot `interval_ms` past it. Check and move are
    /// one atomic step on the server: two callers never take one slot.
    fn reserve(
        &self,
        bucket: &str,
        now_ms: u64,
        interval_ms: u64,
        latest_ms: u64,
    ) -> impl Future<Output = Result<Reserved, StoreError>> + Send;

    /// Put `slowdown` on `bucket`, unless one was put there less than `min_gap_ms` before
    /// `slowdown.since_ms` (many callers refused in one burst slow it down once).
    fn slow_down(
        &self,
        bucket: &str,
        slowdown: Slowdown,
        min_gap_ms: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

impl<T: BudgetStore> BudgetStore for std::sync::Arc<T> {
    fn reserve(
        &self,
        bucket: &str,
        now_ms: u64,
        interval_ms: u64,
        latest_ms: u64,
    ) -> impl Future<Output = Result<Reserved, StoreError>> + Send {
        (**self).reserve(bucket, now_ms, interval_ms, latest_ms)
    }

    fn slow_down(
        &self,
        bucket: &str,
        slowdown: Slowdown,
        min_gap_ms: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).slow_down(bucket, slowdown, min_gap_ms)
    }
}
