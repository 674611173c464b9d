//! The schedule store port: the schedule items of the one table and the sparse index of their
//! next due times (`by_due`), implemented by both store adapters (docs/table.md, "Schedules").

use std::future::Future;

use super::port::StoreError;
use crate::domain::{AgentKey, AgentRecord, ScheduleRecord};

/// Where the next page of due schedules starts: after this due time and agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueCursor {
    pub due_at_ms: u64,
    pub key: AgentKey,
}

/// Which page of the `by_due` index to read: what is due by `until_ms`, at most `limit`,
/// after `after` (the last page's end).
#[derive(Clone, Copy, Debug)]
pub struct DueQuery<'a> {
    pub until_ms: u64,
    pub limit: u32,
    pub after: Option<&'a DueCursor>,
}

impl DueQuery<'_> {
    /// The first page of what is due by `until_ms`, `limit` at most.
    pub fn until(until_ms: u64, limit: u32) -> DueQuery<'static> {
        DueQuery {
            until_ms,
            limit,
            after: None,
        }
    }
}

/// A page of due schedules, earliest due first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DuePage {
    pub records: Vec<ScheduleRecord>,
    pub next: Option<DueCursor>,
}

/// A page of awake agents that became idle, earliest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdlePage {
    pub records: Vec<AgentRecord>,
    pub next: Option<DueCursor>,
}

pub trait ScheduleStore: Send + Sync {
    /// The schedule of `key` (consistent read).
    fn get_schedule(
        &self,
        key: &AgentKey,
    ) -> impl Future<Output = Result<Option<ScheduleRecord>, StoreError>> + Send;

    /// Write `record` if the stored schedule is at `expected_version` (0: none), setting the
    /// index keys from [`ScheduleRecord::due_at_ms`]; else [`StoreError::ScheduleConflict`].
    fn put_schedule(
        &self,
        record: &ScheduleRecord,
        expected_version: u64,
    ) -> impl Future<Output = Result<ScheduleRecord, StoreError>> + Send;

    /// Define (`Some`) or remove (`None`) the schedule of `agent` with its record's summary, in
    /// one transaction: only if the item is at `expected_version` (0: none) and the record still
    /// at `agent.version`, live, not a tombstone; else nothing is written: `Contended`.
    fn set_schedule(
        &self,
        agent: &AgentRecord,
        schedule: Option<&ScheduleRecord>,
        expected_version: u64,
    ) -> impl Future<Output = Result<Option<ScheduleRecord>, StoreError>> + Send;

    /// Remove the schedule item of `key` (absent is not an error), leaving the agent record.
    fn delete_schedule(
        &self,
        key: &AgentKey,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Schedules due by `q.until_ms`, earliest first: a query of the sparse index. Eventually
    /// consistent: a writer decides on a consistent read or a CAS.
    fn due_schedules(
        &self,
        q: DueQuery<'_>,
    ) -> impl Future<Output = Result<DuePage, StoreError>> + Send;

    /// Awake agents idle by `q.until_ms` (their `idle_at_ms`), earliest first: a query of the
    /// same index's idle partition. Eventually consistent.
    fn idle_agents(
        &self,
        q: DueQuery<'_>,
    ) -> impl Future<Output = Result<IdlePage, StoreError>> + Send;
}

impl<T: ScheduleStore> ScheduleStore for std::sync::Arc<T> {
    fn get_schedule(
        &self,
        key: &AgentKey,
    ) -> impl Future<Output = Result<Option<ScheduleRecord>, StoreError>> + Send {
        (**self).get_schedule(key)
    }

    fn put_schedule(
        &self,
        record: &ScheduleRecord,
        expected_version: u64,
    ) -> impl Future<Output = Result<ScheduleRecord, StoreError>> + Send {
        (**self).put_schedule(record, expected_version)
    }

    fn set_schedule(
        &self,
        agent: &AgentRecord,
        schedule: Option<&ScheduleRecord>,
        expected_version: u64,
    ) -> impl Future<Output = Result<Option<ScheduleRecord>, StoreError>> + Send {
        (**self).set_schedule(agent, schedule, expected_version)
    }

    fn delete_schedule(
        &self,
        key: &AgentKey,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).delete_schedule(key)
    }

    fn due_schedules(
        &self,
        q: DueQuery<'_>,
    ) -> impl Future<Output = Result<DuePage, StoreError>> + Send {
        (**self).due_schedules(q)
    }

    fn idle_agents(
        &self,
        q: DueQuery<'_>,
    ) -> impl Future<Output = Result<IdlePage, StoreError>> + Send {
        (**self).idle_agents(q)
    }
}
