//! The in-memory adapter (feature `memory`): the embedded table of local runs, and the second
//! adapter the store contract suite runs against. It mirrors [`super::dynamo::DynamoStore`]
//! exactly, a change feed standing in for the stream. One `std::sync::Mutex`, held with no
//! `.await`, guards everything, so a write's check and apply are one step, as in `UpdateItem`.

mod budget;
mod feed;
mod schedule;
mod usage;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::port::{self, OwnerCursor};
use super::port::{
    AgentPage, AgentStore, Changes, Condition, Document, DocumentKey, OwnerPage, StoreError,
};
use super::stream::RecordChange;
use super::{BudgetStore, Reserved, Slowdown};
use crate::ambient::now_s;
use crate::domain::{AgentKey, AgentRecord, Kind, ScheduleRecord, ToolRegistry};

pub use feed::FEED_KEEP;

#[derive(Default)]
struct Tables {
    /// Expired records stay here (their fence and version carry on into a re-creation).
    agents: HashMap<AgentKey, AgentRecord>,
    registry: Option<ToolRegistry>,
    documents: HashMap<(String, String), Document>,
    schedules: HashMap<AgentKey, ScheduleRecord>,
    budget: HashMap<String, budget::Bucket>,
    feed: feed::Feed,
    usage: usage::Rows,
}

/// The in-memory store. Cheap to create; each instance is its own empty table.
#[derive(Default)]
pub struct MemoryStore {
    tables: Mutex<Tables>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Tables> {
        // Writes are built on a copy and stored in one assignment: a poisoned lock is consistent.
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl AgentStore for MemoryStore {
    async fn get(&self, key: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
        let now = now_s();
        let tables = self.lock();
        Ok(tables
            .agents
            .get(key)
            .filter(|r| !r.is_expired(now))
            .cloned())
    }

    async fn get_many(&self, keys: &[AgentKey]) -> Result<Vec<AgentRecord>, StoreError> {
        let now = now_s();
        let tables = self.lock();
        Ok(keys
            .iter()
            .filter_map(|k| tables.agents.get(k))
            .filter(|r| !r.is_expired(now))
            .cloned()
            .collect())
    }

    async fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> Result<AgentRecord, StoreError> {
        let now = now_s();
        let mut tables = self.lock();
        let stored = tables.agents.get(key);
        let live = stored.filter(|r| !r.is_expired(now));
        if !condition.holds(live) {
            return Err(StoreError::ConditionFailed {
                current: live.cloned().map(Box::new),
            });
        }
        let base = if condition.creates() {
            // A fresh record; an expired one under the key leaves only its counters.
            let mut fresh = AgentRecord::absent(key.clone());
            if let Some(old) = stored {
                fresh.fence = old.fence;
                fresh.version = old.version;
            }
            fresh
        } else {
            // `holds` saw a live record.
            live.cloned()
                .unwrap_or_else(|| AgentRecord::absent(key.clone()))
        };
        let written = changes.write(base);
        let old = tables.agents.insert(key.clone(), written.clone());
        tables.feed.push(old, &written);
        Ok(written)
    }

    async fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<OwnerPage, StoreError> {
        let after = cursor
            .map(|c| OwnerCursor::decode(c, owner_key))
            .transpose()?;
        let limit = limit.max(1) as usize;
        let now = now_s();
        let mut indexed: Vec<(String, AgentRecord)> = {
            let tables = self.lock();
            tables
                .agents
                .values()
                .filter(|r| {
                    r.description.owner_key.as_deref() == Some(owner_key) && !r.is_expired(now)
                })
                .map(|r| {
                    (
                        port::owner_gsi_sk(r.description.created_at.as_deref(), &r.key),
                        r.clone(),
                    )
                })
                .filter(|(sk, _)| after.as_ref().is_none_or(|c| *sk < c.gsi1sk))
                .collect()
        };
        // Newest first, as `ScanIndexForward = false` reads the index.
        indexed.sort_by(|a, b| b.0.cmp(&a.0));
        let more = indexed.len() > limit;
        indexed.truncate(limit);
        let cursor = if more {
            indexed.last().map(|(sk, r)| {
                OwnerCursor {
                    pk: port::agent_pk(&r.key),
                    sk: port::AGENT_SK.to_string(),
                    gsi1pk: port::owner_gsi_pk(owner_key),
                    gsi1sk: sk.clone(),
                }
                .encode()
            })
        } else {
            None
        };
        Ok(OwnerPage {
            records: indexed.into_iter().map(|(_, r)| r).collect(),
            cursor,
        })
    }

    async fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> Result<AgentPage, StoreError> {
        let now = now_s();
        let limit = limit.max(1) as usize;
        // The table's order here is the order of `pk`: stable, like DynamoDB's.
        let after_pk = after.map(port::agent_pk);
        let mut live: Vec<(String, AgentRecord)> = self
            .lock()
            .agents
            .values()
            .filter(|r| !r.is_expired(now) && kind.is_none_or(|k| r.key.kind == k))
            .map(|r| (port::agent_pk(&r.key), r.clone()))
            .filter(|(pk, _)| after_pk.as_ref().is_none_or(|a| pk > a))
            .collect();
        live.sort_by(|a, b| a.0.cmp(&b.0));
        let more = live.len() > limit;
        live.truncate(limit);
        let records: Vec<AgentRecord> = live.into_iter().map(|(_, r)| r).collect();
        let next = more
            .then(|| records.last().map(|r| r.key.clone()))
            .flatten();
        Ok(AgentPage { records, next })
    }

    async fn get_registry(&self) -> Result<Option<ToolRegistry>, StoreError> {
        Ok(self.lock().registry.clone())
    }

    async fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> Result<ToolRegistry, StoreError> {
        let mut tables = self.lock();
        let stored_version = tables.registry.as_ref().map_or(0, |r| r.version);
        if stored_version != expected_version {
            return Err(StoreError::RegistryConflict {
                current: tables.registry.clone().map(Box::new),
            });
        }
        let mut written = registry.clone();
        written.version = expected_version + 1;
        tables.registry = Some(written.clone());
        Ok(written)
    }

    async fn get_document(&self, key: DocumentKey<'_>) -> Result<Option<Document>, StoreError> {
        let now = now_s();
        Ok(self
            .lock()
            .documents
            .get(&(key.pk.to_string(), key.sk.to_string()))
            .filter(|d| d.expires_at.is_none_or(|t| t >= now))
            .cloned())
    }

    async fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &serde_json::Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> Result<Document, StoreError> {
        let now = now_s();
        let mut tables = self.lock();
        let slot = (key.pk.to_string(), key.sk.to_string());
        let stored = tables.documents.get(&slot);
        let live = stored.filter(|d| d.expires_at.is_none_or(|t| t >= now));
        if live.map_or(0, |d| d.version) != expected_version {
            return Err(StoreError::DocumentConflict {
                current: live.cloned().map(Box::new),
            });
        }
        // An expired document's version carries on, as DynamoDB's would.
        let written = Document {
            value: value.clone(),
            version: stored.map_or(0, |d| d.version).max(expected_version) + 1,
            expires_at,
        };
        tables.documents.insert(slot, written.clone());
        Ok(written)
    }
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
        Ok(b.reserve(now_ms, interval_ms, latest_ms))
    }

    async fn slow_down(
        &self,
        bucket: &str,
        slowdown: Slowdown,
        min_gap_ms: u64,
    ) -> Result<(), StoreError> {
        let mut tables = self.lock();
        let b = tables.budget.entry(bucket.to_string()).or_default();
        b.slow_down(slowdown, min_gap_ms);
        Ok(())
    }
}

impl MemoryStore {
    /// The number of the last change made (0: none yet): where the feed stands.
    pub fn changes_made(&self) -> u64 {
        self.lock().feed.last()
    }

    /// Up to `limit` changes after the one numbered `after` (0: from the oldest kept).
    pub fn changes_after(&self, after: u64, limit: usize) -> Vec<RecordChange> {
        self.lock().feed.after(after, limit)
    }
}

/// A reader of a memory store's feed from where it was opened.
pub struct FeedReader {
    store: std::sync::Arc<MemoryStore>,
    after: u64,
}

impl FeedReader {
    /// Reads the changes `store` makes from now on.
    pub fn new(store: std::sync::Arc<MemoryStore>) -> Self {
        let after = store.changes_made();
        FeedReader { store, after }
    }
}

impl crate::store::ChangeSource for FeedReader {
    async fn next(&mut self) -> Result<Vec<RecordChange>, String> {
        let changes = self.store.changes_after(self.after, 1000);
        if let Some(last) = changes.last() {
            self.after = last.sequence.parse().unwrap_or(self.after);
        }
        Ok(changes)
    }
}

impl super::UsageStore for MemoryStore {
    async fn add_usage(&self, row: &super::UsageRow, change_id: &str) -> Result<bool, StoreError> {
        Ok(self.lock().usage.add(row, change_id))
    }

    async fn usage_rows(
        &self,
        from: u64,
        to: u64,
        owner_keys: Option<&[String]>,
    ) -> Result<Vec<super::UsageRow>, StoreError> {
        Ok(self.lock().usage.read(from, to, owner_keys))
    }
}
