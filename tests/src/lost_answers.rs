//! A store whose answers a test loses on purpose, at the store trait: writes that land and
//! then answer `Unavailable` (the answer lost on its way back), and reads that fail after them.
//! The wire-level version of the same faults is [`crate::wire`].

use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;
use snapwake::domain::{AgentKey, AgentRecord, Kind, ToolRegistry};
use snapwake::store::{
    AgentPage, AgentStore, Changes, Condition, Document, DocumentKey, OwnerPage, StoreError,
};

/// Which agent writes a [`LostAnswers`] loses.
pub type Recognise = fn(&Condition, &Changes) -> bool;

/// `inner`, except that:
/// - the next `lose_updates` agent writes that `lost_update` recognises land, then answer
///   `Unavailable`; each such loss arms `record_reads_after` failing record reads;
/// - the next `lose_documents` document writes land, then answer `Unavailable`;
/// - the next `fail_record_reads` record reads and `fail_document_reads` document reads answer
///   `Unavailable` without reading.
///
/// Counters are public so a test can arm them between calls.
pub struct LostAnswers<S> {
    pub inner: S,
    lost_update: Recognise,
    record_reads_after: u32,
    pub lose_updates: AtomicU32,
    pub lose_documents: AtomicU32,
    pub fail_record_reads: AtomicU32,
    pub fail_document_reads: AtomicU32,
}

impl<S> LostAnswers<S> {
    /// Nothing lost yet; agent writes `lost_update` recognises are the ones `lose_updates`
    /// counts, and each loss fails the next `record_reads_after` record reads.
    pub fn new(inner: S, lost_update: Recognise, record_reads_after: u32) -> Self {
        LostAnswers {
            inner,
            lost_update,
            record_reads_after,
            lose_updates: AtomicU32::new(0),
            lose_documents: AtomicU32::new(0),
            fail_record_reads: AtomicU32::new(0),
            fail_document_reads: AtomicU32::new(0),
        }
    }
}

/// Take one from `left` if any is left.
fn spend(left: &AtomicU32) -> bool {
    left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn lost(what: &str) -> StoreError {
    StoreError::Unavailable(format!("injected: the answer of the {what} was lost"))
}

impl<S: AgentStore + snapwake::store::ScheduleStore> AgentStore for LostAnswers<S> {
    async fn get(&self, key: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
        if spend(&self.fail_record_reads) {
            return Err(StoreError::Unavailable("injected: the read failed".into()));
        }
        self.inner.get(key).await
    }

    async fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> Result<AgentRecord, StoreError> {
        if (self.lost_update)(condition, changes) && spend(&self.lose_updates) {
            let _ = self.inner.update(key, condition, changes).await;
            self.fail_record_reads
                .store(self.record_reads_after, Ordering::SeqCst);
            return Err(lost("agent write"));
        }
        self.inner.update(key, condition, changes).await
    }

    async fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<OwnerPage, StoreError> {
        self.inner.query_owner(owner_key, limit, cursor).await
    }

    async fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> Result<AgentPage, StoreError> {
        self.inner.scan_agents(kind, limit, after).await
    }

    async fn get_registry(&self) -> Result<Option<ToolRegistry>, StoreError> {
        self.inner.get_registry().await
    }

    async fn get_document(&self, key: DocumentKey<'_>) -> Result<Option<Document>, StoreError> {
        if spend(&self.fail_document_reads) {
            return Err(StoreError::Unavailable("injected: the read failed".into()));
        }
        self.inner.get_document(key).await
    }

    async fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> Result<Document, StoreError> {
        let written = self
            .inner
            .put_document(key, value, expected_version, expires_at)
            .await;
        if spend(&self.lose_documents) {
            return Err(lost("document write"));
        }
        written
    }

    async fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> Result<ToolRegistry, StoreError> {
        self.inner.put_registry(registry, expected_version).await
    }
}

crate::schedule_store_via!(
    LostAnswers<S>,
    inner,
    |_: &LostAnswers<S>| (),
    <S: snapwake::store::ScheduleStore>
);
