//! The usage port (docs/usage.md): one row per agent and UTC day, each change added to it once.
//! Rows are written by the change stream's consumer only and read by `GET /v1/usage`.

use std::future::Future;

use super::port::StoreError;
use crate::domain::usage::Tally;
use crate::domain::AgentKey;

/// How long a day's row is kept after its day (DynamoDB's TTL removes it): a year and a
/// month, so a year's report is always whole.
pub const ROW_KEPT_DAYS: u64 = 400;

/// Rows one report reads at most: beyond it the answer would not fit a response anyway.
pub const MOST_ROWS: usize = 100_000;

/// One agent's usage on one day.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageRow {
    /// Days since 1970-01-01, UTC.
    pub day: u64,
    /// The owner's key, as on the agent record (`""`: a record that has none).
    pub owner_key: String,
    pub owner: Option<String>,
    pub agent: AgentKey,
    pub tally: Tally,
}

/// Where usage rows are kept.
pub trait UsageStore: Send + Sync {
    /// Add `row.tally` to its day's row, unless the change `change_id` was added to it already:
    /// `Ok(false)` then, and nothing changes. One conditional write, so a change delivered
    /// twice is counted once and two different changes never lose each other's counts.
    fn add_usage(
        &self,
        row: &UsageRow,
        change_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The rows of days `from..=to`, of the agents whose owner key is among `owner_keys`
    /// (`None`: everyone's), day by day; at most [`MOST_ROWS`] + 1, so a caller knows when
    /// there were more than it can answer with.
    fn usage_rows(
        &self,
        from: u64,
        to: u64,
        owner_keys: Option<&[String]>,
    ) -> impl Future<Output = Result<Vec<UsageRow>, StoreError>> + Send;
}

impl<T: UsageStore> UsageStore for std::sync::Arc<T> {
    async fn add_usage(&self, row: &UsageRow, change_id: &str) -> Result<bool, StoreError> {
        (**self).add_usage(row, change_id).await
    }

    async fn usage_rows(
        &self,
        from: u64,
        to: u64,
        owner_keys: Option<&[String]>,
    ) -> Result<Vec<UsageRow>, StoreError> {
        (**self).usage_rows(from, to, owner_keys).await
    }
}
