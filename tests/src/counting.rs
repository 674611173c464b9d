//! A store adapter that counts the calls made through it, for call budgets in tests and
//! benchmarks ("1 read + 3 conditional writes per wake").

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use snapwake::domain::{AgentKey, AgentRecord, Kind, ToolRegistry};
use snapwake::store::{
    AgentPage, AgentStore, Changes, Condition, Document, DocumentKey, OwnerPage, StoreError,
};

/// Calls made so far.
#[derive(Debug, Default)]
pub struct StoreCalls {
    pub gets: AtomicU64,
    pub updates: AtomicU64,
    pub queries: AtomicU64,
    pub scans: AtomicU64,
    pub registry: AtomicU64,
    pub documents: AtomicU64,
    /// Schedule items and the due index.
    pub schedules: AtomicU64,
}

impl StoreCalls {
    /// Every call to the table.
    pub fn total(&self) -> u64 {
        [
            &self.gets,
            &self.updates,
            &self.queries,
            &self.scans,
            &self.registry,
            &self.documents,
            &self.schedules,
        ]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
    }

    pub fn get(&self, counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// `inner` with every call counted.
pub struct CountingStore<S> {
    pub inner: S,
    pub calls: Arc<StoreCalls>,
}

impl<S> CountingStore<S> {
    pub fn new(inner: S) -> Self {
        CountingStore {
            inner,
            calls: Arc::new(StoreCalls::default()),
        }
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl<S: AgentStore + snapwake::store::ScheduleStore> AgentStore for CountingStore<S> {
    fn get(
        &self,
        key: &AgentKey,
    ) -> impl Future<Output = Result<Option<AgentRecord>, StoreError>> + Send {
        bump(&self.calls.gets);
        self.inner.get(key)
    }

    fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> impl Future<Output = Result<AgentRecord, StoreError>> + Send {
        bump(&self.calls.updates);
        self.inner.update(key, condition, changes)
    }

    fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> impl Future<Output = Result<OwnerPage, StoreError>> + Send {
        bump(&self.calls.queries);
        self.inner.query_owner(owner_key, limit, cursor)
    }

    fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> impl Future<Output = Result<AgentPage, StoreError>> + Send {
        bump(&self.calls.scans);
        self.inner.scan_agents(kind, limit, after)
    }

    fn get_registry(
        &self,
    ) -> impl Future<Output = Result<Option<ToolRegistry>, StoreError>> + Send {
        bump(&self.calls.registry);
        self.inner.get_registry()
    }

    fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> impl Future<Output = Result<ToolRegistry, StoreError>> + Send {
        bump(&self.calls.registry);
        self.inner.put_registry(registry, expected_version)
    }

    fn get_document(
        &self,
        key: DocumentKey<'_>,
    ) -> impl Future<Output = Result<Option<Document>, StoreError>> + Send {
        bump(&self.calls.documents);
        self.inner.get_document(key)
    }

    fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &serde_json::Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> impl Future<Output = Result<Document, StoreError>> + Send {
        bump(&self.calls.documents);
        self.inner
            .put_document(key, value, expected_version, expires_at)
    }
}

crate::schedule_store_via!(
    CountingStore<S>,
    inner,
    |s: &CountingStore<S>| bump(&s.calls.schedules),
    <S: snapwake::store::ScheduleStore>
);
