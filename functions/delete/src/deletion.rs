//! Deleting under the agent's lock (wake-protocol.md, "Delete").
//!
//! Every deletion follows one shape: **acquire** the agent record as `deleting` (a CAS on the
//! version seen, or on the version an `If-Match` names), act on AgentKit, then **one fenced
//! write**: back to the state the agent rested in (asleep, awake or failed) after a snapshot
//! delete, or to the `gone` tombstone after an agent delete.
//!
//! - Nothing is deleted before the lock is held, and nothing while a wake holds it: a live
//!   `waking` (or `deleting`) lease answers 409 with `Retry-After`.
//! - Every AgentKit step is idempotent (NotFound is success), so a holder that died part-way
//!   is finished by the next delete once its lease has expired.
//! - The work under the lock is bounded by the lease, so a holder never acts after another
//!   caller could have taken the agent over. A failure part-way hands the lock back (the agent
//!   rests again, partly cleaned) and answers the error; a retry finishes the job.
//!
//! The HTTP routes use this module; so will the sweep and offboarding handlers (cleanup.md).

use std::time::Duration;

use snapwake::agentkit::types::{
    DeleteSession, DeleteSessionSnapshot, Filter, ListSessionSnapshots, ListSessions,
};
use snapwake::agentkit::{list_all, AgentKit};
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, AgentRecord, WakeState};
use snapwake::error::Error;
use snapwake::locate::SNAPSHOT_AGENT_PREFIX;
use snapwake::store::{
    now_ms, now_s, AgentStore, Changes, Condition, Description, DocumentKey, StoreError,
};
use snapwake::wake::WakeSettings;

/// How long a tombstone (and the memory of a deleted snapshot) answers: 30 days.
pub const TOMBSTONE_TTL_S: i64 = 30 * 24 * 3600;
/// Page caps of the listings of one agent (at 100 items a page).
const SESSION_PAGES: usize = 20;
const SNAPSHOT_PAGES: usize = 100;

/// The agent a deletion acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteTarget {
    pub key: AgentKey,
    /// The agent's UserSessionId (`None` for `snapshot-<id>` agents).
    pub user_session_id: Option<String>,
    /// Descriptive fields written with the acquire when the record is new.
    pub describe: Option<Description>,
}

impl DeleteTarget {
    /// The SnapshotId of a `snapshot-<id>` agent.
    fn own_snapshot_id(&self) -> Option<&str> {
        self.key.agent_id.strip_prefix(SNAPSHOT_AGENT_PREFIX)
    }
}

/// Where an agent may have sessions and snapshots: every Tool of its kind, in one region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentPlace {
    pub region: String,
    pub tools: Vec<String>,
}

/// One snapshot and where it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotRef {
    pub tool_id: String,
    pub region: String,
    pub snapshot_id: String,
}

/// What a deletion did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// This call deleted it (or found AgentKit had already).
    Done,
    /// A tombstone says the agent was deleted already: nothing to do.
    AlreadyGone,
}

/// What the record says a deleter may do, before any AgentKit call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The agent is deleted already: answer as done.
    Gone,
    /// Acquire under this condition.
    Acquire(Condition),
}

/// Decide from the record seen: a tombstone is done; an `If-Match` naming another version
/// is 412; a live `waking` or `deleting` lease is 409; anything else may be acquired.
pub fn decide(
    settings: &WakeSettings,
    seen: Option<&AgentRecord>,
    if_match: Option<u64>,
) -> Result<Decision, Error> {
    if seen.is_some_and(|r| r.state == WakeState::Gone) {
        return Ok(Decision::Gone);
    }
    let version = seen.map_or(0, |r| r.version);
    if let Some(given) = if_match {
        if given != version {
            return Err(Error::PreconditionFailed {
                given: given.to_string(),
            });
        }
    }
    if let Some(r) = seen {
        let now = now_ms();
        if r.state.is_held() && settings.lease_is_live(r, now) {
            let what = if r.state == WakeState::Waking {
                "a wake holds the agent"
            } else {
                "a delete holds the agent"
            };
            return Err(Error::AgentBusy {
                detail: what.into(),
                retry_after_s: settings.retry_after_s(r, now),
            });
        }
    }
    Ok(Decision::Acquire(if version == 0 {
        Condition::Absent
    } else {
        Condition::Version(version)
    }))
}

/// The state an agent rests in once a snapshot delete hands it back: what it was, unless it
/// was held by a lease that expired (then asleep: a recorded session is adopted by the next
/// wake's reconcile, never resumed twice).
fn resting(seen: Option<&AgentRecord>) -> WakeState {
    match seen.map(|r| r.state) {
        Some(s @ (WakeState::Asleep | WakeState::Awake | WakeState::Failed)) => s,
        _ => WakeState::Asleep,
    }
}

/// The lock as this caller holds it.
struct Held {
    /// The record as the acquire wrote it.
    record: AgentRecord,
    me: String,
    fence: u64,
    resting: WakeState,
    /// The work under the lock ends before the lease does.
    deadline: Deadline,
}

enum Acquired {
    Held(Box<Held>),
    Gone,
}

/// Deletions over a store and AgentKit.
pub struct Deleter<'a, S, K> {
    store: &'a S,
    agentkit: &'a K,
    settings: &'a WakeSettings,
}

impl<'a, S: AgentStore, K: AgentKit> Deleter<'a, S, K> {
    pub fn new(store: &'a S, agentkit: &'a K, settings: &'a WakeSettings) -> Self {
        Deleter {
            store,
            agentkit,
            settings,
        }
    }

    /// Delete one snapshot of `target` (its membership checked by the caller), deciding from
    /// `seen`, the record as the caller read it.
    pub async fn delete_snapshot(
        &self,
        target: &DeleteTarget,
        snapshot: &SnapshotRef,
        seen: Option<AgentRecord>,
        if_match: Option<u64>,
        deadline: Deadline,
    ) -> Result<Deleted, Error> {
        let held = match self.acquire(target, seen, if_match, deadline).await? {
            Acquired::Gone => return Ok(Deleted::AlreadyGone),
            Acquired::Held(h) => h,
        };
        let SnapshotRef {
            tool_id,
            region,
            snapshot_id,
        } = snapshot;
        let work = async {
            self.delete_snapshot_call(region, tool_id, snapshot_id, held.deadline)
                .await?;
            self.remember_deleted(&target.key, snapshot_id).await
        };
        let result = work.await;
        let restored = self.restore(target, &held).await;
        result?;
        match restored {
            Ok(true) => {}
            // The snapshot is deleted: that is what the caller asked for. The record stays
            // `deleting` until its lease expires (or another caller took it over already).
            Ok(false) => {
                tracing::warn!(agent = %target.key, "snapshot deleted, but the lock was lost")
            }
            Err(e) => {
                tracing::warn!(agent = %target.key, error = %e, "snapshot deleted, but the lock could not be released")
            }
        }
        tracing::info!(agent = %target.key, %snapshot_id, "snapshot deleted");
        Ok(Deleted::Done)
    }

    /// Delete the agent: end its sessions, delete its snapshots, leave the tombstone.
    pub async fn delete_agent(
        &self,
        target: &DeleteTarget,
        place: &AgentPlace,
        seen: Option<AgentRecord>,
        if_match: Option<u64>,
        deadline: Deadline,
    ) -> Result<Deleted, Error> {
        let held = match self.acquire(target, seen, if_match, deadline).await? {
            Acquired::Gone => return Ok(Deleted::AlreadyGone),
            Acquired::Held(h) => h,
        };
        // The session a wake recorded, in case a listing does not show it yet.
        let recorded = held
            .record
            .tool_id
            .clone()
            .zip(held.record.session_id.clone())
            .filter(|(t, _)| place.tools.contains(t));
        if let Err(e) = self.clean(target, place, recorded, held.deadline).await {
            if let Err(release) = self.restore(target, &held).await {
                tracing::warn!(agent = %target.key, error = %release, "could not release the lock after a failed delete");
            }
            return Err(e);
        }
        let tombstone = Changes {
            state: Some(WakeState::Gone),
            holder: Some(None),
            lease_until_ms: Some(0),
            error: Some(None),
            expires_at: Some(Some(now_s() + TOMBSTONE_TTL_S)),
            ..Changes::default()
        };
        match self.fenced(target, &held, tombstone).await? {
            Some(_) => {
                tracing::info!(agent = %target.key, "agent deleted; tombstone written");
                Ok(Deleted::Done)
            }
            // Our lease ran out and somebody else holds the agent now: we cannot promise it
            // is gone. A retry decides again.
            None => Err(Error::AgentBusy {
                detail: "the agent changed while it was being deleted; retry".into(),
                retry_after_s: 1,
            }),
        }
    }

    /// Whether `snapshot_id` of `key` was deleted through snapwake (within the tombstone
    /// time), so that a repeated delete answers 204 rather than 404.
    pub async fn was_deleted(&self, key: &AgentKey, snapshot_id: &str) -> Result<bool, Error> {
        let pk = deleted_snapshot_pk(key, snapshot_id);
        let doc = self
            .store
            .get_document(DocumentKey {
                pk: &pk,
                sk: DELETED_SNAPSHOT_SK,
            })
            .await?;
        Ok(doc.is_some())
    }

    /// Remember a deleted snapshot for [`Deleter::was_deleted`]; a repeat finds it written.
    async fn remember_deleted(&self, key: &AgentKey, snapshot_id: &str) -> Result<(), Error> {
        let pk = deleted_snapshot_pk(key, snapshot_id);
        let value = serde_json::json!({ "deleted_at_ms": now_ms() });
        let doc_key = DocumentKey {
            pk: &pk,
            sk: DELETED_SNAPSHOT_SK,
        };
        match self
            .store
            .put_document(doc_key, &value, 0, Some(now_s() + TOMBSTONE_TTL_S))
            .await
        {
            Ok(_) | Err(StoreError::DocumentConflict { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// End every session of the agent, then delete every snapshot. Sessions first: a session
    /// that expired later would leave one more snapshot behind.
    async fn clean(
        &self,
        target: &DeleteTarget,
        place: &AgentPlace,
        recorded: Option<(String, String)>,
        deadline: Deadline,
    ) -> Result<(), Error> {
        let region = place.region.as_str();
        for tool in &place.tools {
            let mut sessions: Vec<String> = recorded
                .iter()
                .filter(|(t, _)| t == tool)
                .map(|(_, s)| s.clone())
                .collect();
            if let Some(usid) = target.user_session_id.as_deref() {
                let req = ListSessions {
                    tool_id: tool.clone(),
                    filters: Some(vec![Filter::one("UserSessionId", usid)]),
                    ..ListSessions::default()
                };
                match list_all(self.agentkit, region, req, SESSION_PAGES, deadline).await {
                    Ok(listed) => sessions.extend(
                        listed
                            .into_iter()
                            .filter(|s| s.user_session_id.as_deref() == Some(usid))
                            .filter_map(|s| s.session_id),
                    ),
                    // The Tool does not exist in this region: nothing of the agent is there.
                    Err(e) if e.is_not_found() => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            sessions.sort();
            sessions.dedup();
            for session_id in sessions {
                let req = DeleteSession {
                    tool_id: tool.clone(),
                    session_id,
                };
                match self.agentkit.call(region, &req, deadline).await {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e.into()),
                }
            }

            let snapshots: Vec<String> =
                match (target.user_session_id.as_deref(), target.own_snapshot_id()) {
                    (Some(usid), _) => {
                        let req = ListSessionSnapshots {
                            tool_id: tool.clone(),
                            user_session_id: Some(usid.to_string()),
                            ..ListSessionSnapshots::default()
                        };
                        match list_all(self.agentkit, region, req, SNAPSHOT_PAGES, deadline).await {
                            // Trust but verify the filter: never delete another agent's snapshot.
                            Ok(listed) => listed
                                .into_iter()
                                .filter(|s| s.user_session_id.as_deref() == Some(usid))
                                .filter_map(|s| s.snapshot_id)
                                .collect(),
                            Err(e) if e.is_not_found() => continue,
                            Err(e) => return Err(e.into()),
                        }
                    }
                    (None, Some(own)) => vec![own.to_string()],
                    (None, None) => Vec::new(),
                };
            for snapshot_id in snapshots {
                match self
                    .delete_snapshot_call(region, tool, &snapshot_id, deadline)
                    .await
                {
                    Ok(()) => {}
                    // A `snapshot-<id>` agent's snapshot is tried on every Tool of the kind.
                    Err(Error::AgentKit(e)) if e.is_not_found() => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    async fn delete_snapshot_call(
        &self,
        region: &str,
        tool_id: &str,
        snapshot_id: &str,
        deadline: Deadline,
    ) -> Result<(), Error> {
        let req = DeleteSessionSnapshot {
            tool_id: tool_id.to_string(),
            snapshot_id: snapshot_id.to_string(),
        };
        match self.agentkit.call(region, &req, deadline).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Acquire the agent as `deleting`; on a lost CAS decide again with the winner's record.
    async fn acquire(
        &self,
        target: &DeleteTarget,
        mut seen: Option<AgentRecord>,
        if_match: Option<u64>,
        deadline: Deadline,
    ) -> Result<Acquired, Error> {
        for _ in 0..self.settings.max_rounds.max(1) {
            let condition = match decide(self.settings, seen.as_ref(), if_match)? {
                Decision::Gone => return Ok(Acquired::Gone),
                Decision::Acquire(c) => c,
            };
            let me = uuid::Uuid::new_v4().simple().to_string();
            let changes = Changes {
                state: Some(WakeState::Deleting),
                holder: Some(Some(me.clone())),
                bump_fence: true,
                lease_until_ms: Some(now_ms() + self.settings.lease.as_millis() as u64),
                describe: target.describe.clone(),
                ..Changes::default()
            };
            let lease_deadline = deadline.min_after(self.settings.lease);
            let resting = resting(seen.as_ref());
            let held = |r: AgentRecord, me: String| {
                Acquired::Held(Box::new(Held {
                    fence: r.fence,
                    record: r,
                    me,
                    resting,
                    deadline: lease_deadline,
                }))
            };
            match self.store.update(&target.key, &condition, &changes).await {
                Ok(r) => return Ok(held(r, me)),
                // The SDK retried a write that had landed: our token means we won.
                Err(StoreError::ConditionFailed {
                    current: Some(current),
                }) if current.holder.as_deref() == Some(me.as_str()) => {
                    return Ok(held(*current, me))
                }
                Err(StoreError::ConditionFailed { current }) => seen = current.map(|b| *b),
                Err(StoreError::Unavailable(why)) => {
                    tracing::warn!(agent = %target.key, %why, "acquire was ambiguous; re-reading");
                    match self.store.get(&target.key).await? {
                        Some(r) if r.holder.as_deref() == Some(me.as_str()) => {
                            return Ok(held(r, me))
                        }
                        other => seen = other,
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::AgentBusy {
            detail: "too many concurrent changes to the agent; retry".into(),
            retry_after_s: 1,
        })
    }

    /// Hand the agent back in the state it rested in. `Ok(false)`: the lock was lost.
    async fn restore(&self, target: &DeleteTarget, held: &Held) -> Result<bool, Error> {
        let changes = Changes {
            state: Some(held.resting),
            holder: Some(None),
            lease_until_ms: Some(0),
            ..Changes::default()
        };
        Ok(self.fenced(target, held, changes).await?.is_some())
    }

    /// A fenced write by the holder that sets a state and clears the holder; `Ok(None)` when
    /// the lock was lost. An ambiguous write is re-read: the record at our fence with our
    /// state and no holder is our write landed (after a new acquire the fence differs); still
    /// held by us means it did not land, and it is sent again.
    async fn fenced(
        &self,
        target: &DeleteTarget,
        held: &Held,
        changes: Changes,
    ) -> Result<Option<AgentRecord>, Error> {
        let condition = Condition::Held {
            holder: held.me.clone(),
            fence: held.fence,
        };
        let landed = |r: &AgentRecord| {
            r.holder.is_none() && r.fence == held.fence && changes.state == Some(r.state)
        };
        let mut last = String::new();
        for _ in 0..3 {
            match self.store.update(&target.key, &condition, &changes).await {
                Ok(r) => return Ok(Some(r)),
                Err(StoreError::ConditionFailed { current }) => {
                    return Ok(current.map(|b| *b).filter(|r| landed(r)))
                }
                Err(StoreError::Unavailable(why)) => {
                    tracing::warn!(agent = %target.key, %why, "fenced write was ambiguous; re-reading");
                    match self.store.get(&target.key).await? {
                        Some(r) if landed(&r) => return Ok(Some(r)),
                        Some(r)
                            if r.holder.as_deref() == Some(held.me.as_str())
                                && r.fence == held.fence =>
                        {
                            last = why
                        }
                        _ => return Ok(None),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Unavailable(last).into())
    }
}

const DELETED_SNAPSHOT_SK: &str = "DELETED";

fn deleted_snapshot_pk(key: &AgentKey, snapshot_id: &str) -> String {
    format!("SNAPDEL#{}#{}#{}", key.kind, key.agent_id, snapshot_id)
}

/// The budget of one delete request: API Gateway gives up at 30 s.
pub const REQUEST_BUDGET: Duration = Duration::from_secs(25);
