//! Usage rows in memory: the same rows and the same once-per-change rule as `dynamo/usage.rs`.

use std::collections::{BTreeMap, HashSet};

use super::MemoryStore;
use crate::domain::Kind;
use crate::store::usage::{UsageRow, UsageStore, MOST_ROWS};
use crate::store::StoreError;

/// Rows by day, owner key and agent, each with the changes added to it.
pub(super) type Rows = BTreeMap<(u64, String, Kind, String), (UsageRow, HashSet<String>)>;

impl UsageStore for MemoryStore {
    async fn add_usage(&self, row: &UsageRow, change_id: &str) -> Result<bool, StoreError> {
        let mut tables = self.lock();
        let key = (
            row.day,
            row.owner_key.clone(),
            row.agent.kind,
            row.agent.agent_id.clone(),
        );
        let (kept, changes) = tables.usage.entry(key).or_insert_with(|| {
            let empty = UsageRow {
                tally: Default::default(),
                ..row.clone()
            };
            (empty, HashSet::new())
        });
        if !changes.insert(change_id.to_string()) {
            return Ok(false);
        }
        kept.tally.add(&row.tally);
        kept.owner.clone_from(&row.owner);
        Ok(true)
    }

    async fn usage_rows(
        &self,
        from: u64,
        to: u64,
        owner_keys: Option<&[String]>,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let tables = self.lock();
        let first = (from, String::new(), Kind::Codex, String::new());
        Ok(tables
            .usage
            .range(first..)
            .map(|(_, (row, _))| row)
            .take_while(|row| row.day <= to)
            .filter(|row| owner_keys.is_none_or(|keys| keys.contains(&row.owner_key)))
            .take(MOST_ROWS + 1)
            .cloned()
            .collect())
    }
}
