//! A store adapter that counts the calls made through it, for call budgets in tests and
//! benchmarks ("1 read + 3 conditional writes per wake").

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use snapwake::store::{Answer, Call, Layer};

/// Calls made so far.
#[derive(Debug, Default)]
pub struct StoreCalls {
    pub gets: AtomicU64,
    /// `get_many`: one `BatchGetItem` for up to 100 records.
    pub batch_gets: AtomicU64,
    pub updates: AtomicU64,
    pub queries: AtomicU64,
    pub scans: AtomicU64,
    pub registry: AtomicU64,
    pub documents: AtomicU64,
    /// Schedule items and the due index.
    pub schedules: AtomicU64,
    /// The AgentKit budget's slots and slowdowns.
    pub budget: AtomicU64,
    /// Usage rows added and read (docs/usage.md).
    pub usage: AtomicU64,
}

impl StoreCalls {
    /// Every call to the table.
    pub fn total(&self) -> u64 {
        [
            &self.gets,
            &self.batch_gets,
            &self.updates,
            &self.queries,
            &self.scans,
            &self.registry,
            &self.documents,
            &self.schedules,
            &self.budget,
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

impl<S: Send + Sync> Layer for CountingStore<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        let calls = &self.calls;
        let counter = match call {
            Call::Get(_) => &calls.gets,
            Call::GetMany(keys) => {
                // One request per hundred keys, as the DynamoDB adapter sends them.
                let requests = keys.len().div_ceil(snapwake::store::GET_MANY_KEYS).max(1);
                calls
                    .batch_gets
                    .fetch_add(requests as u64 - 1, Ordering::Relaxed);
                &calls.batch_gets
            }
            Call::Update(..) => &calls.updates,
            Call::QueryOwner => &calls.queries,
            Call::ScanAgents => &calls.scans,
            Call::GetRegistry | Call::PutRegistry => &calls.registry,
            Call::GetDocument(_) | Call::PutDocument(_) => &calls.documents,
            Call::GetSchedule(_)
            | Call::PutSchedule(_)
            | Call::SetSchedule(_)
            | Call::DeleteSchedule(_)
            | Call::DueSchedules
            | Call::IdleAgents => &calls.schedules,
            Call::Budget => &calls.budget,
            Call::AddUsage | Call::UsageRows => &calls.usage,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        answer
    }
}
