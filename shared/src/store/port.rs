//! The port itself: [`AgentStore`], the [`Condition`] of every write, the [`Changes`] it
//! makes, and the [`StoreError`]s a store answers with (see the module docs of `store`).

use std::future::Future;

use crate::domain::{
    AgentKey, AgentRecord, Description, Kind, SnapshotView, ToolRegistry, WakeState,
};

/// When a write may happen.
///
/// Only [`Condition::Absent`] can hold without a live record: an expired record is absent, so
/// the other three fail on it (with `current: None`), exactly as they fail on a missing one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Condition {
    /// No live record: none at all, or only an expired one (`attribute_not_exists(pk)`).
    Absent,
    /// CAS: the record is at exactly this version. `Version(0)` is the version of an absent
    /// record (what a read of a missing key answers), so it means [`Condition::Absent`].
    Version(u64),
    /// Fenced: this caller holds the lock (`holder = :me AND fence = :mine`).
    Held { holder: String, fence: u64 },
    /// Complete-by-anyone: `state = waking AND fence = :f AND session_id = :s`.
    WakingWith { fence: u64, session_id: String },
    /// A sleep settled by anyone: `state = sleeping AND fence = :f AND snapshot_id = :s` (the
    /// snapshot the sleep is waiting for).
    SleepingWith { fence: u64, snapshot_id: String },
}

impl Condition {
    /// Whether the condition holds for `live`, the record as reads see it (expired → `None`).
    pub fn holds(&self, live: Option<&AgentRecord>) -> bool {
        let Some(r) = live else {
            return self.creates();
        };
        match self {
            Condition::Absent | Condition::Version(0) => false,
            Condition::Version(v) => r.version == *v,
            Condition::Held { holder, fence } => {
                r.holder.as_deref() == Some(holder.as_str()) && r.fence == *fence
            }
            Condition::SleepingWith { fence, snapshot_id } => {
                r.state == WakeState::Sleeping
                    && r.fence == *fence
                    && r.snapshot_id.as_deref() == Some(snapshot_id.as_str())
            }
            Condition::WakingWith { fence, session_id } => {
                r.state == WakeState::Waking
                    && r.fence == *fence
                    && r.session_id.as_deref() == Some(session_id.as_str())
            }
        }
    }

    /// Whether a write under this condition creates the record afresh.
    pub fn creates(&self) -> bool {
        matches!(self, Condition::Absent | Condition::Version(0))
    }
}

/// What a write changes; `None` leaves a field as it is, `Some(None)` removes it. Every write
/// also sets `version = version + 1` and `updated_at`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub state: Option<WakeState>,
    pub holder: Option<Option<String>>,
    /// `fence = fence + 1` (acquire).
    pub bump_fence: bool,
    pub lease_until_ms: Option<u64>,
    pub snapshot_id: Option<Option<String>>,
    pub session_id: Option<Option<String>>,
    pub session_expire_at: Option<Option<String>>,
    pub session_created_at: Option<Option<String>>,
    pub verified_at_ms: Option<u64>,
    pub resume_sent_at_ms: Option<Option<u64>>,
    pub create_sent_at_ms: Option<Option<u64>>,
    pub poll_until_ms: Option<u64>,
    pub poller: Option<Option<String>>,
    pub awaited_since_ms: Option<u64>,
    pub error: Option<Option<String>>,
    /// The agent's snapshot summaries, replaced as a whole.
    pub snapshots: Option<Vec<SnapshotView>>,
    /// The schedule summary the agent's views show.
    pub schedule: Option<Option<crate::domain::ScheduleSummary>>,
    pub expires_at: Option<Option<i64>>,
    /// What set off the change an acquire starts (`AgentRecord::started_by`).
    pub started_by: Option<crate::domain::Trigger>,
    /// Descriptive fields to set; each `Some` field of it overwrites.
    pub describe: Option<Description>,
    /// The state change this write is, when it is one: stored on the record (and removed by
    /// any write that is none), where the change stream's consumer finds it
    /// (`crate::events::derive`, docs/events.md).
    pub announce: Option<crate::domain::Announcement>,
}

impl Changes {
    /// `record` with the fields these changes set written over it; the counters the store
    /// keeps (`version`, `fence`, `updated_at`) are left as they are.
    pub fn apply(&self, mut r: AgentRecord) -> AgentRecord {
        fn set<T: Clone>(field: &mut T, to: &Option<T>) {
            if let Some(v) = to {
                field.clone_from(v);
            }
        }
        set(&mut r.state, &self.state);
        set(&mut r.holder, &self.holder);
        set(&mut r.lease_until_ms, &self.lease_until_ms);
        set(&mut r.snapshot_id, &self.snapshot_id);
        set(&mut r.session_id, &self.session_id);
        set(&mut r.session_expire_at, &self.session_expire_at);
        set(&mut r.session_created_at, &self.session_created_at);
        set(&mut r.verified_at_ms, &self.verified_at_ms);
        set(&mut r.resume_sent_at_ms, &self.resume_sent_at_ms);
        set(&mut r.create_sent_at_ms, &self.create_sent_at_ms);
        set(&mut r.poll_until_ms, &self.poll_until_ms);
        set(&mut r.poller, &self.poller);
        set(&mut r.awaited_since_ms, &self.awaited_since_ms);
        set(&mut r.snapshots, &self.snapshots);
        set(&mut r.schedule, &self.schedule);
        set(&mut r.error, &self.error);
        set(&mut r.expires_at, &self.expires_at);
        if let Some(t) = self.started_by {
            r.started_by = Some(t);
        }
        if let Some(d) = &self.describe {
            r.description.overlay(d);
        }
        // Every write says whether it is a state change: one that is none clears the last's.
        r.announced = self.announce;
        r
    }

    /// `record` as the store writes it: [`Changes::apply`], then the store's own counters.
    pub fn write(&self, record: AgentRecord) -> AgentRecord {
        let mut r = self.apply(record);
        r.fence += u64::from(self.bump_fence);
        r.version += 1;
        r.updated_at = Some(crate::timestamp::now());
        r
    }

    /// Whether `record` shows every field these changes set: a write that landed (writing it
    /// again would change nothing but the counters).
    pub fn shown_by(&self, record: &AgentRecord) -> bool {
        self.apply(record.clone()) == *record
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The condition did not hold; `current` is the record as it is (`None`: absent).
    #[error("condition failed")]
    ConditionFailed { current: Option<Box<AgentRecord>> },
    /// The store could not be reached or answered an error. For a write this is ambiguous:
    /// it may have been applied; re-read before deciding.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// An item could not be read as a record.
    #[error("corrupt item: {0}")]
    Corrupt(String),
    /// A `query_owner` cursor that this store did not issue for this owner key (a client
    /// error: answer 400).
    #[error("invalid cursor: {0}")]
    InvalidCursor(String),
    /// `put_registry`'s expected version was not the stored one; `current` is the registry as
    /// it is (`None`: none stored).
    #[error("registry version conflict")]
    RegistryConflict { current: Option<Box<ToolRegistry>> },
    /// A document write found another version; `current` is the live document (`None`:
    /// absent or expired).
    #[error("document version conflict")]
    DocumentConflict { current: Option<Box<Document>> },
    /// A transaction's conditions did not all hold (another writer came first); nothing was
    /// written. Read again and decide again.
    #[error("the items changed meanwhile")]
    Contended,
    /// A schedule write found another version; `current` is the stored schedule (`None`:
    /// absent).
    #[error("schedule version conflict")]
    ScheduleConflict {
        current: Option<Box<crate::domain::ScheduleRecord>>,
    },
}

/// A small JSON document under its own key — an idempotency record, the deploy lock, the sweep
/// checkpoint — versioned for compare-and-swap and optionally expiring.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub value: serde_json::Value,
    /// +1 on every write; 0 is never stored (it means "absent" in a condition).
    pub version: u64,
    /// Epoch seconds after which the document reads as absent.
    pub expires_at: Option<i64>,
}

/// Where a document lives: `pk` must not collide with agent records (`AGENT#…`) or the
/// registry (`REGISTRY`); by convention `IDEM#…`, `LOCK#…`, `SWEEP`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DocumentKey<'a> {
    pub pk: &'a str,
    pub sk: &'a str,
}

/// A page of an owner's agents from the owner index, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnerPage {
    pub records: Vec<AgentRecord>,
    /// Present when more records follow.
    pub cursor: Option<String>,
}

/// A page of every agent record, in the table's own order (no particular meaning).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentPage {
    pub records: Vec<AgentRecord>,
    /// Where the next page starts (after this agent); `None`: the table has no more.
    pub next: Option<AgentKey>,
}

/// The store port.
/// How many records one [`AgentStore::get_many`] request reads: DynamoDB's `BatchGetItem`
/// limit.
pub const GET_MANY_KEYS: usize = 100;

pub trait AgentStore: Send + Sync {
    /// The live record of `key` (strongly consistent; expired → `None`).
    fn get(
        &self,
        key: &AgentKey,
    ) -> impl Future<Output = Result<Option<AgentRecord>, StoreError>> + Send;

    /// The live records of `keys` (strongly consistent; expired and missing ones left out), in
    /// no particular order: [`GET_MANY_KEYS`] a request. For the refresh and the index sync,
    /// which read many records to write a few.
    fn get_many(
        &self,
        keys: &[AgentKey],
    ) -> impl Future<Output = Result<Vec<AgentRecord>, StoreError>> + Send;

    /// Apply `changes` to `key` if `condition` holds; answers the record as written.
    ///
    /// With [`Condition::Absent`] (or `Version(0)`) the write creates the record afresh: an
    /// expired record under the key is replaced, and only its `fence` and `version` carry on
    /// (so a holder of the old incarnation can never match a fence or an ETag of the new one);
    /// every other field is what `changes` sets.
    ///
    /// A write the SDK retried after a lost response may come back as `ConditionFailed` whose
    /// `current` is the caller's own write (same `holder`, same `fence`): callers that set a
    /// new holder token compare it before deciding they lost.
    fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> impl Future<Output = Result<AgentRecord, StoreError>> + Send;

    /// Records in the owner index under `owner_key`, newest `created_at` first.
    fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> impl Future<Output = Result<OwnerPage, StoreError>> + Send;

    /// Live agent records of every owner (of `kind` only, when given), at most `limit`,
    /// starting after `after`: an admin's page of everyone is read from here. Expired records
    /// are skipped; tombstones are not (the caller decides what to show).
    fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> impl Future<Output = Result<AgentPage, StoreError>> + Send;

    /// The tool registry, if deploy has written one.
    fn get_registry(&self)
        -> impl Future<Output = Result<Option<ToolRegistry>, StoreError>> + Send;

    /// The live document at `key` (consistent read; expired → `None`).
    fn get_document(
        &self,
        key: DocumentKey<'_>,
    ) -> impl Future<Output = Result<Option<Document>, StoreError>> + Send;

    /// Write `value` at `key` if the live document is at `expected_version` (0: absent or
    /// expired); answers the document as written (version + 1). A failed condition is
    /// [`StoreError::DocumentConflict`] carrying the live document.
    fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &serde_json::Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> impl Future<Output = Result<Document, StoreError>> + Send;

    /// Write the registry if its stored version is `expected_version` (0: none stored yet);
    /// answers the registry as written (version + 1).
    fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> impl Future<Output = Result<ToolRegistry, StoreError>> + Send;
}

/// A shared store is a store: several handlers (or a test's callers) can hold one adapter.
impl<T: AgentStore> AgentStore for std::sync::Arc<T> {
    fn get(
        &self,
        key: &AgentKey,
    ) -> impl Future<Output = Result<Option<AgentRecord>, StoreError>> + Send {
        (**self).get(key)
    }

    fn get_many(
        &self,
        keys: &[AgentKey],
    ) -> impl Future<Output = Result<Vec<AgentRecord>, StoreError>> + Send {
        (**self).get_many(keys)
    }

    fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> impl Future<Output = Result<AgentRecord, StoreError>> + Send {
        (**self).update(key, condition, changes)
    }

    fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> impl Future<Output = Result<OwnerPage, StoreError>> + Send {
        (**self).query_owner(owner_key, limit, cursor)
    }

    fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> impl Future<Output = Result<AgentPage, StoreError>> + Send {
        (**self).scan_agents(kind, limit, after)
    }

    fn get_registry(
        &self,
    ) -> impl Future<Output = Result<Option<ToolRegistry>, StoreError>> + Send {
        (**self).get_registry()
    }

    fn get_document(
        &self,
        key: DocumentKey<'_>,
    ) -> impl Future<Output = Result<Option<Document>, StoreError>> + Send {
        (**self).get_document(key)
    }

    fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &serde_json::Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> impl Future<Output = Result<Document, StoreError>> + Send {
        (**self).put_document(key, value, expected_version, expires_at)
    }

    fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> impl Future<Output = Result<ToolRegistry, StoreError>> + Send {
        (**self).put_registry(registry, expected_version)
    }
}
