//! The budget store port: one item per AgentKit limit and lane (docs/table.md, "The AgentKit
//! budget"), holding the earliest untaken slot and the last 429's slowdown.

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
    /// Every slot up to the caller's latest is taken (none was); the first free is at `free_at_ms`.
    Full {
        free_at_ms: u64,
        slowdown: Option<Slowdown>,
    },
}

impl Reserved {
    pub fn slowdown(&self) -> Option<Slowdown> {
        match self {
            Reserved::At { slowdown, .. } | Reserved::Full { slowdown, .. } => *slowdown,
        }
    }
}

pub trait BudgetStore: Send + Sync {
    /// Take the earliest free slot of `bucket`, `max(next free, now_ms)`, if no later than
    /// `latest_ms`, and move the next free `interval_ms` past it, in one atomic step.
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
