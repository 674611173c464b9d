//! The store port: how snapwake reads and writes its one DynamoDB table, and its two adapters,
//! [`dynamo::DynamoStore`] and (feature `memory`) [`memory::MemoryStore`], which honour exactly
//! the same conditions. Every write is a conditional update (docs/table.md): the store, not the
//! caller, increments `version` (and `fence` on an acquire), so no write moves it backwards, and
//! a failed condition returns the current record, so a loser decides again without a read.
//! Records past `expires_at` read as absent everywhere (TTL deletion is lazy).
//!
//! This file also holds [`Layer`]: a decorator of the whole store port as one method,
//! [`Layer::around`], told what each call is ([`Call`]): it says only what it adds, and cannot
//! forget a call the port gains. And [`Within`], the layer every request's store passes through.

pub mod dynamo;
pub mod schedule;
pub mod stream;
pub mod update;
pub mod usage;
#[cfg(feature = "memory")]
pub mod memory;
pub mod table;
mod port;

use crate::domain::{AgentKey, AgentRecord, Kind, ScheduleRecord, ToolRegistry};
use crate::invocation::Deadline;
pub use port::*;
pub use schedule::{DueCursor, DuePage, DueQuery, IdlePage, ScheduleStore};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
pub use stream::{ChangeSource, RecordChange};
pub use usage::{UsageRow, UsageStore};

/// A call of the store port, as a layer sees it.
#[derive(Clone, Copy, Debug)]
pub enum Call<'c> {
    Get(&'c AgentKey),
    GetMany(&'c [AgentKey]),
    Update(&'c AgentKey, &'c Condition, &'c Changes),
    QueryOwner,
    ScanAgents,
    GetRegistry,
    PutRegistry,
    GetDocument(DocumentKey<'c>),
    PutDocument(DocumentKey<'c>),
    GetSchedule(&'c AgentKey),
    PutSchedule(&'c ScheduleRecord),
    /// A schedule defined or removed together with its agent's summary.
    SetSchedule(&'c AgentKey),
    DeleteSchedule(&'c AgentKey),
    DueSchedules,
    /// Awake agents by when they become idle (the same index's idle partition).
    IdleAgents,
    /// A slot of the AgentKit budget taken, or a slowdown put on it.
    Budget,
    /// A change's usage added to a day's row (docs/usage.md).
    AddUsage,
    /// A report's rows read.
    UsageRows,
}

impl Call<'_> {
    /// Whether the call may change the table (an unanswered one may have landed).
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Call::Update(..)
                | Call::PutRegistry
                | Call::PutDocument(_)
                | Call::PutSchedule(_)
                | Call::SetSchedule(_)
                | Call::DeleteSchedule(_)
                | Call::Budget
                | Call::AddUsage
        )
    }
}

/// An answer of the store, not yet asked for. Boxed, and `Send` by its type for whatever it
/// borrows, which an opaque future could not promise to a spawned task's checks.
pub type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A store that is another store with something around every call.
pub trait Layer: Send + Sync {
    type Inner: Send + Sync;

    fn inner(&self) -> &Self::Inner;

    /// `answer` is the inner store's answer to `call`, not yet asked for: await it, or not.
    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T>;

    /// Told of every agent write that landed, with the record as written.
    fn written<'a>(
        &'a self,
        changes: &'a Changes,
        record: &'a AgentRecord,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        let _ = (changes, record);
        Box::pin(async {})
    }
}

impl<L: Layer> AgentStore for L
where
    L::Inner: AgentStore,
{
    async fn get(&self, key: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
        self.around(Call::Get(key), Box::pin(self.inner().get(key)))
            .await
    }

    async fn get_many(&self, keys: &[AgentKey]) -> Result<Vec<AgentRecord>, StoreError> {
        let answer = Box::pin(self.inner().get_many(keys));
        self.around(Call::GetMany(keys), answer).await
    }

    async fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> Result<AgentRecord, StoreError> {
        let call = Call::Update(key, condition, changes);
        let record = self
            .around(call, Box::pin(self.inner().update(key, condition, changes)))
            .await?;
        self.written(changes, &record).await;
        Ok(record)
    }

    async fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<OwnerPage, StoreError> {
        let answer = self.inner().query_owner(owner_key, limit, cursor);
        self.around(Call::QueryOwner, Box::pin(answer)).await
    }

    async fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> Result<AgentPage, StoreError> {
        let answer = self.inner().scan_agents(kind, limit, after);
        self.around(Call::ScanAgents, Box::pin(answer)).await
    }

    async fn get_registry(&self) -> Result<Option<ToolRegistry>, StoreError> {
        self.around(Call::GetRegistry, Box::pin(self.inner().get_registry()))
            .await
    }

    async fn get_document(&self, key: DocumentKey<'_>) -> Result<Option<Document>, StoreError> {
        self.around(
            Call::GetDocument(key),
            Box::pin(self.inner().get_document(key)),
        )
        .await
    }

    async fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &serde_json::Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> Result<Document, StoreError> {
        let answer = self
            .inner()
            .put_document(key, value, expected_version, expires_at);
        self.around(Call::PutDocument(key), Box::pin(answer)).await
    }

    async fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> Result<ToolRegistry, StoreError> {
        let answer = self.inner().put_registry(registry, expected_version);
        self.around(Call::PutRegistry, Box::pin(answer)).await
    }
}

impl<L: Layer> ScheduleStore for L
where
    L::Inner: ScheduleStore,
{
    async fn get_schedule(&self, key: &AgentKey) -> Result<Option<ScheduleRecord>, StoreError> {
        self.around(
            Call::GetSchedule(key),
            Box::pin(self.inner().get_schedule(key)),
        )
        .await
    }

    async fn put_schedule(
        &self,
        record: &ScheduleRecord,
        expected_version: u64,
    ) -> Result<ScheduleRecord, StoreError> {
        let answer = self.inner().put_schedule(record, expected_version);
        self.around(Call::PutSchedule(record), Box::pin(answer))
            .await
    }

    async fn set_schedule(
        &self,
        agent: &AgentRecord,
        schedule: Option<&ScheduleRecord>,
        expected_version: u64,
    ) -> Result<Option<ScheduleRecord>, StoreError> {
        let answer = self.inner().set_schedule(agent, schedule, expected_version);
        self.around(Call::SetSchedule(&agent.key), Box::pin(answer))
            .await
    }

    async fn delete_schedule(&self, key: &AgentKey) -> Result<(), StoreError> {
        self.around(
            Call::DeleteSchedule(key),
            Box::pin(self.inner().delete_schedule(key)),
        )
        .await
    }

    async fn due_schedules(&self, q: DueQuery<'_>) -> Result<DuePage, StoreError> {
        let answer = self.inner().due_schedules(q);
        self.around(Call::DueSchedules, Box::pin(answer)).await
    }

    async fn idle_agents(&self, q: DueQuery<'_>) -> Result<IdlePage, StoreError> {
        let answer = self.inner().idle_agents(q);
        self.around(Call::IdleAgents, Box::pin(answer)).await
    }
}

impl<L: Layer> BudgetStore for L
where
    L::Inner: BudgetStore,
{
    async fn reserve(
        &self,
        bucket: &str,
        now_ms: u64,
        interval_ms: u64,
        latest_ms: u64,
    ) -> Result<Reserved, StoreError> {
        let answer = self.inner().reserve(bucket, now_ms, interval_ms, latest_ms);
        self.around(Call::Budget, Box::pin(answer)).await
    }

    async fn slow_down(
        &self,
        bucket: &str,
        slowdown: Slowdown,
        min_gap_ms: u64,
    ) -> Result<(), StoreError> {
        let answer = self.inner().slow_down(bucket, slowdown, min_gap_ms);
        self.around(Call::Budget, Box::pin(answer)).await
    }
}

// ---- A store bounded by a request's deadline (plus [`STORE_GRACE`]): past it a call answers
// `Unavailable`, so a hung table is a 503 inside API Gateway's 30 s, not a hung request.

/// Store calls may run this long past the deadline: deadlines already keep 2 s to answer, and a
/// write that gives a lock back is worth finishing rather than leave an agent held.
pub const STORE_GRACE: Duration = Duration::from_millis(1000);

/// `S`, every call bounded by `deadline`.
#[derive(Debug)]
pub struct Within<'a, S> {
    store: &'a S,
    deadline: Deadline,
}

// By hand: a derive would ask `S: Copy`, and only the reference is copied.
impl<S> Clone for Within<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Within<'_, S> {}

impl<'a, S> Within<'a, S> {
    pub fn new(store: &'a S, deadline: Deadline) -> Self {
        Within { store, deadline }
    }

    pub fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// The same store bounded by the earlier of its deadline and `deadline`.
    pub fn until(&self, deadline: Deadline) -> Within<'a, S> {
        Within {
            store: self.store,
            deadline: self.deadline.min(deadline),
        }
    }

    pub fn unbounded(&self) -> &'a S {
        self.store
    }
}

impl<S: Send + Sync> Layer for Within<'_, S> {
    type Inner = S;

    fn inner(&self) -> &S {
        self.store
    }

    fn around<'a, T: Send + 'a>(&'a self, _: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        Box::pin(async move {
            let limit = self.deadline.remaining() + STORE_GRACE;
            // Boxed: an SDK request is a large future (debug builds would need megabytes of stack).
            match tokio::time::timeout(limit, Box::pin(answer)).await {
                Ok(answer) => answer,
                Err(_) => Err(StoreError::Unavailable(
                    "the table did not answer within the request's budget".into(),
                )),
            }
        })
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::domain::{AgentKey, Kind};
    use crate::store::memory::MemoryStore;
    use crate::store::{AgentStore, Changes, Condition};

    /// A table that never answers reads (as a stopped DynamoDB whose connections hang).
    struct Hangs(MemoryStore);

    impl Layer for Hangs {
        type Inner = MemoryStore;
        fn inner(&self) -> &MemoryStore {
            &self.0
        }
        fn around<'a, T: Send + 'a>(
            &'a self,
            call: Call<'a>,
            answer: Answer<'a, T>,
        ) -> Answer<'a, T> {
            Box::pin(async move {
                if call.writes() {
                    return answer.await;
                }
                std::future::pending().await
            })
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

// The budget store port: one item per AgentKit limit and lane (docs/table.md, "The AgentKit
// budget"), holding the earliest untaken slot and the last 429's slowdown.
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

impl<L: Layer> UsageStore for L
where
    L::Inner: UsageStore,
{
    async fn add_usage(&self, row: &UsageRow, change_id: &str) -> Result<bool, StoreError> {
        let answer: Answer<'_, bool> = Box::pin(self.inner().add_usage(row, change_id));
        self.around(Call::AddUsage, answer).await
    }

    async fn usage_rows(
        &self,
        from: u64,
        to: u64,
        owner_keys: Option<&[String]>,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let answer: Answer<'_, Vec<UsageRow>> =
            Box::pin(self.inner().usage_rows(from, to, owner_keys));
        self.around(Call::UsageRows, answer).await
    }
}
