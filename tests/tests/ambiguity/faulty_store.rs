//! Part 1's faulty store: [`FaultyStore`] wraps the DynamoDB adapter and, armed for one write
//! site, makes that write land but lose its answer or time out without landing ([`Mode`]).

use super::*;

// ---------------------------------------------------------------------------------------------
// The faulty store

/// What an armed fault does to the write it recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The write is applied, then its answer is lost (`Unavailable` instead of the record).
    LandLoseAnswer,
    /// The write times out (a short wait) and is not applied.
    TimeoutNoLand,
}

pub(crate) const MODES: [Mode; 2] = [Mode::LandLoseAnswer, Mode::TimeoutNoLand];

/// How long a write that "times out" takes to fail.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(200);

/// Recognises one write site by the write's condition and changes.
pub(crate) type Recognise = fn(&Condition, &Changes) -> bool;

pub(crate) struct Armed {
    pub(crate) recognise: Recognise,
    pub(crate) mode: Mode,
    pub(crate) left: u32,
}

/// The DynamoDB adapter with one armed fault on `update`; reads and documents pass through.
pub(crate) struct FaultyStore {
    pub(crate) inner: DynamoStore,
    pub(crate) armed: Mutex<Option<Armed>>,
    pub(crate) fired: AtomicU32,
}

impl FaultyStore {
    pub(crate) fn new(inner: DynamoStore) -> Self {
        FaultyStore {
            inner,
            armed: Mutex::new(None),
            fired: AtomicU32::new(0),
        }
    }

    /// Fire `mode` on the next `times` writes `recognise` matches.
    pub(crate) fn arm(&self, recognise: Recognise, mode: Mode, times: u32) {
        *self.armed.lock().unwrap() = Some(Armed {
            recognise,
            mode,
            left: times,
        });
    }

    pub(crate) fn disarm(&self) {
        *self.armed.lock().unwrap() = None;
    }

    pub(crate) fn fired(&self) -> u32 {
        self.fired.load(Ordering::SeqCst)
    }

    /// Whether this write is hit, and how (the fault disarms itself once spent).
    pub(crate) fn hit(&self, condition: &Condition, changes: &Changes) -> Option<Mode> {
        let mut armed = self.armed.lock().unwrap();
        let a = armed.as_mut()?;
        if !(a.recognise)(condition, changes) {
            return None;
        }
        let mode = a.mode;
        a.left -= 1;
        if a.left == 0 {
            *armed = None;
        }
        self.fired.fetch_add(1, Ordering::SeqCst);
        Some(mode)
    }
}

impl AgentStore for FaultyStore {
    async fn get(&self, key: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
        self.inner.get(key).await
    }

    async fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> Result<AgentRecord, StoreError> {
        match self.hit(condition, changes) {
            None => self.inner.update(key, condition, changes).await,
            Some(Mode::LandLoseAnswer) => {
                let landed = self.inner.update(key, condition, changes).await;
                Err(StoreError::Unavailable(format!(
                    "injected: the answer was lost (the write answered {})",
                    if landed.is_ok() { "ok" } else { "an error" }
                )))
            }
            Some(Mode::TimeoutNoLand) => {
                tokio::time::sleep(TIMEOUT).await;
                Err(StoreError::Unavailable(
                    "injected: the write timed out".into(),
                ))
            }
        }
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
        kind: Option<snapwake::domain::Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> Result<snapwake::store::AgentPage, StoreError> {
        self.inner.scan_agents(kind, limit, after).await
    }

    async fn get_registry(&self) -> Result<Option<ToolRegistry>, StoreError> {
        self.inner.get_registry().await
    }

    async fn get_document(&self, key: DocumentKey<'_>) -> Result<Option<Document>, StoreError> {
        self.inner.get_document(key).await
    }

    async fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> Result<Document, StoreError> {
        self.inner
            .put_document(key, value, expected_version, expires_at)
            .await
    }

    async fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> Result<ToolRegistry, StoreError> {
        self.inner.put_registry(registry, expected_version).await
    }
}

snapwake_tests::schedule_store_via!(FaultyStore, inner, |_: &FaultyStore| (),);
