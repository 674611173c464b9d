//! Usage rows in memory: the same rows and the same once-per-change rule as `dynamo/usage.rs`.

use std::collections::{BTreeMap, HashSet};

use crate::domain::Kind;
use crate::store::usage::{UsageRow, MOST_ROWS};

/// A row's place: its day, owner key, and agent.
type RowKey = (u64, String, Kind, String);

/// Rows by day, owner key and agent, each with the changes added to it.
#[derive(Default)]
pub(super) struct Rows(BTreeMap<RowKey, (UsageRow, HashSet<String>)>);

impl Rows {
    /// `row`'s counts added to its day's row, unless `change_id` was added already (`false`).
    pub(super) fn add(&mut self, row: &UsageRow, change_id: &str) -> bool {
        let key = (
            row.day,
            row.owner_key.clone(),
            row.agent.kind,
            row.agent.agent_id.clone(),
        );
        let (kept, changes) = self.0.entry(key).or_insert_with(|| {
            let empty = UsageRow {
                tally: Default::default(),
                ..row.clone()
            };
            (empty, HashSet::new())
        });
        if !changes.insert(change_id.to_string()) {
            return false;
        }
        kept.tally.add(&row.tally);
        kept.owner.clone_from(&row.owner);
        true
    }

    /// The rows of days `from..=to` of `owner_keys` (all: `None`), at most `MOST_ROWS + 1`.
    pub(super) fn read(&self, from: u64, to: u64, owner_keys: Option<&[String]>) -> Vec<UsageRow> {
        let first = (from, String::new(), Kind::Codex, String::new());
        self.0
            .range(first..)
            .map(|(_, (row, _))| row)
            .take_while(|row| row.day <= to)
            .filter(|row| owner_keys.is_none_or(|keys| keys.contains(&row.owner_key)))
            .take(MOST_ROWS + 1)
            .cloned()
            .collect()
    }
}
