//! Schedule items in memory, in `by_due`'s order (due time, then key), with DynamoDB's conditions.

use super::MemoryStore;
use crate::ambient::now_s;
use crate::domain::{AgentKey, AgentRecord, ScheduleRecord, WakeState};
use crate::store::port::{agent_pk, schedule_pk};
use crate::store::{Changes, DueCursor, DuePage, DueQuery, IdlePage, ScheduleStore, StoreError};

impl ScheduleStore for MemoryStore {
    async fn get_schedule(&self, key: &AgentKey) -> Result<Option<ScheduleRecord>, StoreError> {
        Ok(self.lock().schedules.get(key).cloned())
    }

    async fn put_schedule(
        &self,
        record: &ScheduleRecord,
        expected_version: u64,
    ) -> Result<ScheduleRecord, StoreError> {
        let key = record
            .key
            .clone()
            .ok_or_else(|| StoreError::Corrupt("a schedule write names no agent".into()))?;
        let mut tables = self.lock();
        let stored = tables.schedules.get(&key);
        if stored.map_or(0, |r| r.version) != expected_version {
            return Err(StoreError::ScheduleConflict {
                current: stored.cloned().map(Box::new),
            });
        }
        let mut written = record.clone();
        written.version = expected_version + 1;
        written.updated_at = Some(crate::ambient::now());
        tables.schedules.insert(key, written.clone());
        Ok(written)
    }

    async fn set_schedule(
        &self,
        agent: &AgentRecord,
        schedule: Option<&ScheduleRecord>,
        expected_version: u64,
    ) -> Result<Option<ScheduleRecord>, StoreError> {
        let key = &agent.key;
        let now = now_s();
        let mut tables = self.lock();
        let stored = tables.schedules.get(key).map_or(0, |r| r.version);
        let live = tables.agents.get(key).filter(|r| !r.is_expired(now));
        let agent_holds =
            live.is_some_and(|r| r.version == agent.version && r.state != WakeState::Gone);
        if stored != expected_version || !agent_holds {
            return Err(StoreError::Contended);
        }
        let summary = schedule.map(ScheduleRecord::summary);
        let changes = Changes {
            schedule: Some(summary),
            ..Changes::default()
        };
        let written_agent = changes.write(live.cloned().unwrap_or_else(|| agent.clone()));
        let old = tables.agents.insert(key.clone(), written_agent.clone());
        tables.feed.push(old, &written_agent);
        let Some(schedule) = schedule else {
            tables.schedules.remove(key);
            return Ok(None);
        };
        let mut written = schedule.clone();
        written.key = Some(key.clone());
        written.version = expected_version + 1;
        written.updated_at = Some(crate::ambient::now());
        tables.schedules.insert(key.clone(), written.clone());
        Ok(Some(written))
    }

    async fn delete_schedule(&self, key: &AgentKey) -> Result<(), StoreError> {
        self.lock().schedules.remove(key);
        Ok(())
    }

    async fn due_schedules(&self, q: DueQuery<'_>) -> Result<DuePage, StoreError> {
        let tables = self.lock();
        let position = |r: &ScheduleRecord| {
            let key = r.key.as_ref().map(schedule_pk).unwrap_or_default();
            (r.due_at_ms().unwrap_or(u64::MAX), key)
        };
        let start = q.after.map(|c| (c.due_at_ms, schedule_pk(&c.key)));
        let mut due: Vec<&ScheduleRecord> = tables
            .schedules
            .values()
            .filter(|r| r.due_at_ms().is_some_and(|d| d <= q.until_ms))
            .filter(|r| start.as_ref().is_none_or(|s| position(r) > *s))
            .collect();
        due.sort_by_key(|r| position(r));
        let (records, more) = first(due, q.limit);
        let next = match records.last() {
            Some(last) if more => Some(DueCursor {
                due_at_ms: last.due_at_ms().unwrap_or(0),
                key: last
                    .key
                    .clone()
                    .ok_or_else(|| StoreError::Corrupt("a schedule without its agent".into()))?,
            }),
            _ => None,
        };
        Ok(DuePage { records, next })
    }

    async fn idle_agents(&self, q: DueQuery<'_>) -> Result<IdlePage, StoreError> {
        let tables = self.lock();
        let position = |r: &AgentRecord| (r.idle_at_ms.unwrap_or(u64::MAX), agent_pk(&r.key));
        let start = q.after.map(|c| (c.due_at_ms, agent_pk(&c.key)));
        let now_s = now_s();
        let mut idle: Vec<&AgentRecord> = tables
            .agents
            .values()
            .filter(|r| !r.is_expired(now_s))
            .filter(|r| r.idle_at_ms.is_some_and(|at| at <= q.until_ms))
            .filter(|r| start.as_ref().is_none_or(|s| position(r) > *s))
            .collect();
        idle.sort_by_key(|r| position(r));
        let (records, more) = first(idle, q.limit);
        let next = records.last().filter(|_| more).map(|last| DueCursor {
            due_at_ms: last.idle_at_ms.unwrap_or(0),
            key: last.key.clone(),
        });
        Ok(IdlePage { records, next })
    }
}

/// The first `limit` (one at least) of `sorted`, and whether there were more: a page.
fn first<T: Clone>(sorted: Vec<&T>, limit: u32) -> (Vec<T>, bool) {
    let limit = limit.max(1) as usize;
    let more = sorted.len() > limit;
    (sorted.into_iter().take(limit).cloned().collect(), more)
}
