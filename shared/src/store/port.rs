//! The port itself: [`AgentStore`], the [`Condition`] of every write, the [`Changes`] it
//! makes, and the [`StoreError`]s a store answers with.
//!
//! The item layout both adapters share (docs/table.md): agent keys as `pk`/`sk`, the owner
//! index keys (`gsi1pk`/`gsi1sk`) and its opaque cursor. The in-memory adapter pages by the same
//! `gsi1sk` and cursor, so both answer `query_owner` identically.

use crate::domain::usage::UsageMark;
use crate::domain::{
    AgentKey, AgentRecord, Description, Kind, SnapshotView, ToolRegistry, WakeState,
};
use data_encoding::BASE64URL_NOPAD;
use std::collections::BTreeMap;
use std::future::Future;

/// When a write may happen; all but [`Condition::Absent`] fail on an expired record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Condition {
    /// No live record: none at all, or only an expired one (`attribute_not_exists(pk)`).
    Absent,
    /// CAS: the record is at exactly this version; `Version(0)` is an absent record's: `Absent`.
    Version(u64),
    /// Fenced: this caller holds the lock (`holder = :me AND fence = :mine`).
    Held { holder: String, fence: u64 },
    /// Complete-by-anyone: `state = waking AND fence = :f AND session_id = :s`.
    WakingWith { fence: u64, session_id: String },
    /// A sleep settled by anyone: `state = sleeping AND fence = :f AND snapshot_id = :s`.
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
    pub schedule: Option<Option<crate::domain::ScheduleSummary>>,
    /// The owner's idle time (`Some(None)`: the deployment's).
    pub idle_minutes: Option<Option<u32>>,
    /// When the agent becomes idle (the idle index). A write that leaves the agent asleep,
    /// failed or gone removes it unless it says otherwise ([`Changes::idle_at`]).
    pub idle_at_ms: Option<Option<u64>>,
    pub expires_at: Option<Option<i64>>,
    pub started_by: Option<crate::domain::Trigger>,
    /// Descriptive fields to set; each `Some` field of it overwrites.
    pub describe: Option<Description>,
    /// The state change this write is, if any: stored on the record (cleared by any write that
    /// is none) for the change stream's consumer (`crate::events::derive`).
    pub announce: Option<crate::domain::Announcement>,
}

impl Changes {
    /// `record` with the fields these changes set written over it, the store's counters aside.
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
        set(&mut r.idle_minutes, &self.idle_minutes);
        set(&mut r.idle_at_ms, &self.idle_at());
        set(&mut r.error, &self.error);
        set(&mut r.expires_at, &self.expires_at);
        if let Some(t) = self.started_by {
            r.started_by = Some(t);
        }
        if let Some(d) = &self.describe {
            r.description.overlay(d);
        }
        r.announced = self.announce;
        r
    }

    /// What this write does to the idle index: what it says, else removed from an agent at
    /// rest and not awake (asleep, failed, gone): only an awake agent can become idle. A change
    /// in flight keeps it, since it may give the agent back awake (a snapshot's delete, a
    /// sleep that failed): the simulated deployment found one that lost its idle time so.
    pub fn idle_at(&self) -> Option<Option<u64>> {
        match (self.idle_at_ms, self.state) {
            (Some(at), _) => Some(at),
            (None, Some(WakeState::Asleep | WakeState::Failed | WakeState::Gone)) => Some(None),
            (None, _) => None,
        }
    }

    /// `record` as the store writes it: [`Changes::apply`], then the store's own counters.
    pub fn write(&self, record: AgentRecord) -> AgentRecord {
        let mut r = self.apply(record);
        r.fence += u64::from(self.bump_fence);
        r.version += 1;
        let now = crate::ambient::now();
        if let Some(a) = self.announce {
            let at_s = crate::ambient::epoch_ms(&now).unwrap_or(0) / 1000;
            r.usage = Some(UsageMark::after(r.usage.as_ref(), a.what, a.trigger, at_s));
        }
        r.updated_at = Some(now);
        r
    }

    /// Whether `record` shows every field these changes set: the write landed.
    pub fn shown_by(&self, record: &AgentRecord) -> bool {
        self.apply(record.clone()) == *record
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The condition did not hold; `current` is the record as it is (`None`: absent).
    #[error("condition failed")]
    ConditionFailed { current: Option<Box<AgentRecord>> },
    /// The store could not be reached or answered an error; for a write, ambiguous: re-read.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("corrupt item: {0}")]
    Corrupt(String),
    /// A `query_owner` cursor not issued for this owner key (a client error: 400).
    #[error("invalid cursor: {0}")]
    InvalidCursor(String),
    /// `put_registry` found another version; `current` is the stored registry.
    #[error("registry version conflict")]
    RegistryConflict { current: Option<Box<ToolRegistry>> },
    /// A document write found another version; `current` is the live document.
    #[error("document version conflict")]
    DocumentConflict { current: Option<Box<Document>> },
    /// A transaction's conditions did not all hold; nothing was written: read and decide again.
    #[error("the items changed meanwhile")]
    Contended,
    /// A schedule write found another version; `current` is the stored schedule.
    #[error("schedule version conflict")]
    ScheduleConflict {
        current: Option<Box<crate::domain::ScheduleRecord>>,
    },
}

/// A small JSON document under its own key (an idempotency record, a lock), versioned for CAS.
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
    pub cursor: Option<String>,
}

/// A page of every agent record, in the table's own order (no particular meaning).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentPage {
    pub records: Vec<AgentRecord>,
    /// Where the next page starts (after this agent); `None`: the table has no more.
    pub next: Option<AgentKey>,
}

/// Records per [`AgentStore::get_many`] request: DynamoDB's `BatchGetItem` limit.
pub const GET_MANY_KEYS: usize = 100;

/// The store port.
pub trait AgentStore: Send + Sync {
    /// The live record of `key` (strongly consistent; expired → `None`).
    fn get(
        &self,
        key: &AgentKey,
    ) -> impl Future<Output = Result<Option<AgentRecord>, StoreError>> + Send;

    /// The live records of `keys` (strongly consistent), in no particular order.
    fn get_many(
        &self,
        keys: &[AgentKey],
    ) -> impl Future<Output = Result<Vec<AgentRecord>, StoreError>> + Send;

    /// Apply `changes` to `key` if `condition` holds; answers the record as written. A create
    /// carries on only an expired record's `fence` and `version`, so its old holders never match.
    /// A write the SDK retried after a lost response may fail with `current` being the caller's
    /// own write: callers that set a new holder compare it before deciding they lost.
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

    /// Live agent records of every owner (of `kind`, if given) after `after`, tombstones included.
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

    /// Write `value` at `key` if the live document is at `expected_version` (0: absent).
    fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &serde_json::Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> impl Future<Output = Result<Document, StoreError>> + Send;

    /// Write the registry if stored at `expected_version` (0: none); answers it as written.
    fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> impl Future<Output = Result<ToolRegistry, StoreError>> + Send;
}

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

pub const AGENT_SK: &str = "AGENT";
pub const REGISTRY_PK: &str = "REGISTRY";
pub const REGISTRY_SK: &str = "TOOLS";
pub const OWNER_INDEX: &str = "by_owner";
/// The sparse index of schedules' next due times (GSI on `due_pk`/`due_at`).
pub const DUE_INDEX: &str = "by_due";
pub const DUE_PK: &str = "DUE";
/// The partition of `by_due` holding awake agents by when they become idle (`due_at` on the
/// agent record itself; docs/table.md, "Idle sleep").
pub const IDLE_PK: &str = "IDLE";
pub const SCHEDULE_SK: &str = "SCHEDULE";
pub const BUDGET_SK: &str = "BUDGET";

/// `BUDGET#<bucket>`: one item per AgentKit limit and lane (`crate::budget`).
pub fn budget_pk(bucket: &str) -> String {
    format!("BUDGET#{bucket}")
}

/// `gsi1sk`'s start for a record with no `created_at`: fixed, or records would jump between
/// pages on every write; it sorts before every RFC 3339 time, so such records come last.
pub const NO_CREATED_AT: &str = "0000";

/// `AGENT#<kind>#<agent_id>`.
pub fn agent_pk(key: &AgentKey) -> String {
    format!("AGENT#{}#{}", key.kind, key.agent_id)
}

/// The inverse of [`agent_pk`]. The agent id may itself contain `#`: only the first two separate.
pub fn parse_agent_pk(pk: &str) -> Result<AgentKey, StoreError> {
    let mut parts = pk.splitn(3, '#');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("AGENT"), Some(kind), Some(agent_id)) if !agent_id.is_empty() => {
            let kind: Kind = kind
                .parse()
                .map_err(|e| StoreError::Corrupt(format!("pk {pk:?}: {e}")))?;
            Ok(AgentKey::new(kind, agent_id))
        }
        _ => Err(StoreError::Corrupt(format!(
            "pk {pk:?} is not AGENT#<kind>#<agent_id>"
        ))),
    }
}

/// `SCHEDULE#<kind>#<agent_id>`: not `AGENT#…`, which every agent reader takes for a record.
pub fn schedule_pk(key: &AgentKey) -> String {
    format!("SCHEDULE#{}#{}", key.kind, key.agent_id)
}

pub fn parse_schedule_pk(pk: &str) -> Result<AgentKey, StoreError> {
    match pk.strip_prefix("SCHEDULE#") {
        Some(rest) => parse_agent_pk(&format!("AGENT#{rest}")),
        None => Err(StoreError::Corrupt(format!(
            "pk {pk:?} is not SCHEDULE#<kind>#<agent_id>"
        ))),
    }
}

/// `OWNER#<owner_key>`.
pub fn owner_gsi_pk(owner_key: &str) -> String {
    format!("OWNER#{owner_key}")
}

/// `<created_at>#<kind>#<agent_id>`: unique per agent, so a cursor names exactly one position.
pub fn owner_gsi_sk(created_at: Option<&str>, key: &AgentKey) -> String {
    format!(
        "{}#{}#{}",
        created_at.unwrap_or(NO_CREATED_AT),
        key.kind,
        key.agent_id
    )
}

/// Where an owner's next page starts: `by_owner`'s `LastEvaluatedKey`, as base64url JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerCursor {
    pub pk: String,
    pub sk: String,
    pub gsi1pk: String,
    pub gsi1sk: String,
}

impl OwnerCursor {
    pub fn encode(&self) -> String {
        let map: BTreeMap<&str, &str> = [
            ("pk", self.pk.as_str()),
            ("sk", self.sk.as_str()),
            ("gsi1pk", self.gsi1pk.as_str()),
            ("gsi1sk", self.gsi1sk.as_str()),
        ]
        .into_iter()
        .collect();
        // Serialising a map of strings cannot fail.
        let json = serde_json::to_vec(&map).unwrap_or_default();
        BASE64URL_NOPAD.encode(&json)
    }

    /// Decode a cursor a caller sent back; it is valid only for the owner key it was issued for.
    pub fn decode(cursor: &str, owner_key: &str) -> Result<OwnerCursor, StoreError> {
        let invalid = |why: &str| StoreError::InvalidCursor(why.to_string());
        let bytes = BASE64URL_NOPAD
            .decode(cursor.as_bytes())
            .map_err(|_| invalid("not base64url"))?;
        let mut map: BTreeMap<String, String> =
            serde_json::from_slice(&bytes).map_err(|_| invalid("not a cursor"))?;
        let mut take = |name: &str| map.remove(name).ok_or_else(|| invalid("not a cursor"));
        let c = OwnerCursor {
            pk: take("pk")?,
            sk: take("sk")?,
            gsi1pk: take("gsi1pk")?,
            gsi1sk: take("gsi1sk")?,
        };
        if !map.is_empty() {
            return Err(invalid("not a cursor"));
        }
        if c.gsi1pk != owner_gsi_pk(owner_key) {
            return Err(invalid("cursor of another listing"));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod keys_tests;
