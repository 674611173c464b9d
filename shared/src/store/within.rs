//! A store bounded by a request's deadline: every call gets the time left (plus a short grace,
//! [`STORE_GRACE`]) and, past it, is abandoned and answers [`StoreError::Unavailable`] — for a
//! write, ambiguous, as any unanswered write is. A handler wraps its store in one of these per
//! request, so a table that hangs or has gone away becomes a 503 inside API Gateway's 30 s,
//! never a hung request (the SDK's own timeouts are per attempt, not per request).

use std::future::Future;
use std::time::Duration;

use super::{
    AgentPage, AgentStore, Changes, Condition, Document, DocumentKey, OwnerPage, StoreError,
};
use crate::deadline::Deadline;
use crate::domain::{AgentKey, AgentRecord, Kind, ToolRegistry};

/// Store calls may run this long past the deadline. Deadlines already keep a margin to answer
/// (2 s before the Lambda's end), and a write that gives a lock back or records a failure is
/// worth finishing rather than leaving an agent held until its lease runs out.
pub const STORE_GRACE: Duration = Duration::from_millis(1000);

/// `S`, every call bounded by `deadline`.
#[derive(Clone, Copy, Debug)]
pub struct Within<'a, S> {
    store: &'a S,
    deadline: Deadline,
}

impl<'a, S: AgentStore> Within<'a, S> {
    pub fn new(store: &'a S, deadline: Deadline) -> Self {
        Within { store, deadline }
    }

    pub fn deadline(&self) -> Deadline {
        self.deadline
    }

    async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let limit = self.deadline.remaining() + STORE_GRACE;
        // Boxed: an SDK request is a large future, and every caller would carry one per call
        // site (debug builds then need megabytes of stack).
        match tokio::time::timeout(limit, Box::pin(call)).await {
            Ok(answer) => answer,
            Err(_) => Err(StoreError::Unavailable(
                "the table did not answer within the request's budget".into(),
            )),
        }
    }
}

impl<S: AgentStore> AgentStore for Within<'_, S> {
    async fn get(&self, key: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
        self.bounded(self.store.get(key)).await
    }

    async fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> Result<AgentRecord, StoreError> {
        self.bounded(self.store.update(key, condition, changes))
            .await
    }

    async fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<OwnerPage, StoreError> {
        self.bounded(self.store.query_owner(owner_key, limit, cursor))
            .await
    }

    async fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> Result<AgentPage, StoreError> {
        self.bounded(self.store.scan_agents(kind, limit, after))
            .await
    }

    async fn get_registry(&self) -> Result<Option<ToolRegistry>, StoreError> {
        self.bounded(self.store.get_registry()).await
    }

    async fn get_document(&self, key: DocumentKey<'_>) -> Result<Option<Document>, StoreError> {
        self.bounded(self.store.get_document(key)).await
    }

    async fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &serde_json::Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> Result<Document, StoreError> {
        self.bounded(
            self.store
                .put_document(key, value, expected_version, expires_at),
        )
        .await
    }

    async fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> Result<ToolRegistry, StoreError> {
        self.bounded(self.store.put_registry(registry, expected_version))
            .await
    }
}

impl<S: AgentStore + super::ScheduleStore> super::ScheduleStore for Within<'_, S> {
    async fn get_schedule(
        &self,
        key: &AgentKey,
    ) -> Result<Option<crate::domain::ScheduleRecord>, StoreError> {
        self.bounded(self.store.get_schedule(key)).await
    }

    async fn put_schedule(
        &self,
        record: &crate::domain::ScheduleRecord,
        expected_version: u64,
    ) -> Result<crate::domain::ScheduleRecord, StoreError> {
        self.bounded(self.store.put_schedule(record, expected_version))
            .await
    }

    async fn delete_schedule(&self, key: &AgentKey) -> Result<(), StoreError> {
        self.bounded(self.store.delete_schedule(key)).await
    }

    async fn due_schedules(
        &self,
        until_ms: u64,
        limit: u32,
        after: Option<&super::DueCursor>,
    ) -> Result<super::DuePage, StoreError> {
        self.bounded(self.store.due_schedules(until_ms, limit, after))
            .await
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::domain::Kind;
    use crate::store::memory::MemoryStore;

    /// A table that never answers reads (as a stopped DynamoDB whose connections hang).
    struct Hangs(MemoryStore);

    impl AgentStore for Hangs {
        async fn get(&self, _: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
            std::future::pending().await
        }
        async fn update(
            &self,
            key: &AgentKey,
            condition: &Condition,
            changes: &Changes,
        ) -> Result<AgentRecord, StoreError> {
            self.0.update(key, condition, changes).await
        }
        async fn query_owner(
            &self,
            _: &str,
            _: u32,
            _: Option<&str>,
        ) -> Result<OwnerPage, StoreError> {
            std::future::pending().await
        }
        async fn scan_agents(
            &self,
            _: Option<Kind>,
            _: u32,
            _: Option<&AgentKey>,
        ) -> Result<AgentPage, StoreError> {
            std::future::pending().await
        }
        async fn get_registry(&self) -> Result<Option<ToolRegistry>, StoreError> {
            std::future::pending().await
        }
        async fn get_document(&self, _: DocumentKey<'_>) -> Result<Option<Document>, StoreError> {
            std::future::pending().await
        }
        async fn put_document(
            &self,
            _: DocumentKey<'_>,
            _: &serde_json::Value,
            _: u64,
            _: Option<i64>,
        ) -> Result<Document, StoreError> {
            std::future::pending().await
        }
        async fn put_registry(&self, _: &ToolRegistry, _: u64) -> Result<ToolRegistry, StoreError> {
            std::future::pending().await
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_table_that_hangs_answers_unavailable_at_the_deadline_and_grace() {
        let store = Hangs(MemoryStore::new());
        let deadline = Deadline::after(Duration::from_secs(3));
        let within = Within::new(&store, deadline);
        let started = tokio::time::Instant::now();
        let got = within.get(&AgentKey::new(Kind::Codex, "x")).await;
        assert!(matches!(got, Err(StoreError::Unavailable(_))));
        assert_eq!(started.elapsed(), Duration::from_secs(3) + STORE_GRACE);
        // Past the deadline a call still gets the grace, no more.
        let started = tokio::time::Instant::now();
        assert!(within.get_registry().await.is_err());
        assert_eq!(started.elapsed(), STORE_GRACE);
        // Calls that answer are passed through.
        let key = AgentKey::new(Kind::Codex, "y");
        let written = within
            .update(&key, &Condition::Absent, &Changes::default())
            .await
            .unwrap();
        assert_eq!(written.version, 1);
    }
}
