//! The end of a sleep, which anyone may carry out once its snapshot is named in the record:
//! poll the snapshot; Ready → end the session, then write `asleep`; failed → write `awake`
//! back, the session untouched. The holder writes fenced; anyone else (a joining sleep, a
//! wake waiting for the sleep) writes *by anyone* under `state = sleeping AND fence = f AND
//! snapshot_id = s`, after winning a poll lease, so only one caller at a time asks AgentKit.
//!
//! The session is ended only after a GetSessionSnapshot answered `Ready` for the snapshot of
//! that very session, and only while the sleep's lease has time left for the DeleteSession: a
//! sleep whose lease lapsed may be taken over by a wake that adopts the session, and a late
//! DeleteSession must never end the session that wake handed out.

use crate::agentkit::types::{DeleteSession, GetSessionSnapshot, Snapshot};
use crate::agentkit::AgentKit;
use crate::deadline::Deadline;
use crate::domain::{AgentRecord, WakeState};
use crate::error::Error;
use crate::locate::Home;
use crate::lock::{AgentLock, Held, Written};
use crate::store::{AgentStore, Changes};
use crate::timestamp::now_ms;

use super::SleepSettings;

/// Who settles the sleep.
pub(crate) enum Settler<'h> {
    /// The holder: fenced writes.
    Holder(&'h mut Held),
    /// Anyone who holds a poll lease: writes by anyone.
    Anyone,
}

/// How far a sleep got.
#[allow(clippy::large_enum_variant)] // returned once, consumed at once
pub(crate) enum Finished {
    /// The snapshot is Ready and the session ended: the agent is asleep.
    Asleep {
        record: AgentRecord,
        snapshot: Snapshot,
    },
    /// The snapshot will not become Ready: the agent is awake again, its session untouched.
    Failed(String),
    /// Not settled by `until` (the snapshot is still being made, or the session could not be
    /// ended yet): the sleep goes on from the record.
    Pending(AgentRecord),
}

/// Finishing one agent's sleep.
pub(crate) struct Finish<'l, 'a, S, K> {
    pub lock: &'l AgentLock<'a, S>,
    pub agentkit: &'l K,
    pub settings: &'l SleepSettings,
    pub home: &'l Home,
}

impl<S: AgentStore, K: AgentKit> Finish<'_, '_, S, K> {
    /// Poll the snapshot `record` names until it is Ready (end the session, settle asleep),
    /// will not be (settle awake), or `until`: at least once (a short request asks once), each
    /// call within the request's deadline, the pauses at the record's pace.
    pub(crate) async fn run(
        &self,
        mut settler: Settler<'_>,
        record: AgentRecord,
        until: Deadline,
    ) -> Result<Finished, Error> {
        let (Some(session_id), Some(snapshot_id)) =
            (record.session_id.clone(), record.snapshot_id.clone())
        else {
            return Ok(Finished::Pending(record));
        };
        let pace = self.settings.pace();
        loop {
            let req = GetSessionSnapshot {
                snapshot_id: snapshot_id.clone(),
                tool_id: self.home.tool_id.clone(),
            };
            match self
                .agentkit
                .call(&self.home.region, &req, self.lock.deadline())
                .await
            {
                Ok(r) if r.snapshot.is_wakeable() => {
                    return self
                        .end_session(&mut settler, record, &session_id, r.snapshot)
                        .await;
                }
                Ok(r) if r.snapshot.is_in_progress() => {}
                Ok(r) => {
                    let status = r.snapshot.status.unwrap_or_else(|| "no status".into());
                    let reason = format!("the snapshot ended {status} instead of Ready");
                    return Ok(self.failed(&mut settler, &record, reason).await);
                }
                Err(e) if e.is_not_found() => {
                    let reason = "the snapshot disappeared before it was Ready".to_string();
                    return Ok(self.failed(&mut settler, &record, reason).await);
                }
                // AgentKit did not answer this time: the next poll may (within the budget).
                Err(e) => {
                    tracing::info!(agent = %record.key, error = %e, "snapshot poll failed; polling on")
                }
            }
            let gap = pace.gap(record.awaited_since_ms, now_ms());
            if !until.allows(gap) {
                return Ok(Finished::Pending(record));
            }
            tokio::time::sleep(gap).await;
        }
    }

    /// The snapshot is Ready: end the session (a NotFound means it has ended already), then
    /// write `asleep` with the snapshot first among the record's summaries.
    async fn end_session(
        &self,
        settler: &mut Settler<'_>,
        record: AgentRecord,
        session_id: &str,
        snapshot: Snapshot,
    ) -> Result<Finished, Error> {
        // The DeleteSession must be over (answered or given up) while the lease still holds.
        let skew = self.settings.lock.skew_margin.as_millis() as u64;
        let lease_left_ms = record.lease_until_ms.saturating_sub(now_ms() + skew);
        let within = self
            .lock
            .deadline()
            .min_after(std::time::Duration::from_millis(lease_left_ms));
        if !within.allows(self.agentkit.request_timeout()) {
            tracing::warn!(agent = %record.key, "sleep: too little of the lease is left to end the session");
            return Ok(Finished::Pending(record));
        }
        let req = DeleteSession {
            tool_id: self.home.tool_id.clone(),
            session_id: session_id.to_string(),
        };
        match self.agentkit.call(&self.home.region, &req, within).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                // The snapshot is Ready; the next caller ends the session (DeleteSession is
                // idempotent).
                tracing::warn!(agent = %record.key, error = %e, "sleep: the session could not be ended yet");
                return Ok(Finished::Pending(record));
            }
        }
        let mut summaries = vec![crate::view::snapshot_view(&snapshot)];
        summaries.extend(
            record
                .snapshots
                .iter()
                .filter(|s| Some(&s.snapshot_id) != snapshot.snapshot_id.as_ref())
                .cloned(),
        );
        let changes = Changes {
            state: Some(WakeState::Asleep),
            announce: Some(crate::domain::Announce::Asleep),
            holder: Some(None),
            lease_until_ms: Some(0),
            poll_until_ms: Some(0),
            session_id: Some(None),
            session_expire_at: Some(None),
            verified_at_ms: Some(0),
            error: Some(None),
            snapshots: Some(summaries),
            ..Changes::default()
        };
        let asleep = match self.settle(settler, &record, changes.clone()).await {
            Ok(Written::Done(r)) => r,
            // Somebody else finished this sleep meanwhile.
            Ok(Written::Lost(Some(r)))
                if r.state == WakeState::Asleep && r.snapshot_id == record.snapshot_id =>
            {
                r
            }
            // The session is ended and the snapshot Ready whatever the record says; the next
            // caller finds the same and writes it.
            other => {
                if let Err(e) = other {
                    tracing::warn!(agent = %record.key, error = %e, "could not record the finished sleep");
                }
                as_asleep(record, &changes)
            }
        };
        tracing::info!(agent = %asleep.key, "sleep: asleep");
        Ok(Finished::Asleep {
            record: asleep,
            snapshot,
        })
    }

    /// The snapshot will not become Ready: the agent is awake again (its session was never
    /// touched), with the reason kept on the record.
    async fn failed(
        &self,
        settler: &mut Settler<'_>,
        record: &AgentRecord,
        reason: String,
    ) -> Finished {
        tracing::warn!(agent = %record.key, %reason, "sleep failed");
        let changes = Changes {
            state: Some(WakeState::Awake),
            holder: Some(None),
            lease_until_ms: Some(0),
            poll_until_ms: Some(0),
            error: Some(Some(reason.clone())),
            ..Changes::default()
        };
        if let Err(e) = self.settle(settler, record, changes).await {
            tracing::warn!(agent = %record.key, error = %e, "could not record the failed sleep");
        }
        Finished::Failed(reason)
    }

    async fn settle(
        &self,
        settler: &mut Settler<'_>,
        record: &AgentRecord,
        changes: Changes,
    ) -> Result<Written, crate::store::StoreError> {
        match settler {
            Settler::Holder(held) => self.lock.write(held, changes).await,
            Settler::Anyone => {
                let snapshot_id = record.snapshot_id.as_deref().unwrap_or_default();
                self.lock
                    .settle_sleep_by_anyone(&record.key, record.fence, snapshot_id, changes)
                    .await
            }
        }
    }
}

/// `record` as the asleep write would have left it (for an answer, when that write could not
/// be made).
fn as_asleep(mut record: AgentRecord, changes: &Changes) -> AgentRecord {
    record.state = WakeState::Asleep;
    record.holder = None;
    record.lease_until_ms = 0;
    record.poll_until_ms = 0;
    record.session_id = None;
    record.session_expire_at = None;
    record.error = None;
    if let Some(s) = &changes.snapshots {
        record.snapshots.clone_from(s);
    }
    record
}
