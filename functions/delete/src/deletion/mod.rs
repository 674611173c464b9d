//! Deleting under the agent's lock (docs/wake-protocol.md, "Create and delete under the same
//! lock").
//!
//! Every deletion follows one shape, through [`snapwake::lock`]: **acquire** the agent record as
//! `deleting` (a CAS on the version seen, or on the version an `If-Match` names; the wake
//! fields are kept, not a new generation), act on AgentKit, then **one fenced write**: back to
//! the state the agent rested in (asleep, awake or failed) after a snapshot delete, or to the
//! `gone` tombstone after an agent delete.
//!
//! - Nothing is deleted before the lock is held, and nothing while a wake or a create holds
//!   it: a live `waking`, `creating` (or `deleting`) lease answers 409 with `Retry-After`.
//! - Every AgentKit step is idempotent (NotFound is success), so a holder that died part-way
//!   is finished by the next delete once its lease has expired.
//! - The work under the lock is bounded by the lease, so a holder never acts after another
//!   caller could have taken the agent over. A failure part-way hands the lock back (the agent
//!   rests again, partly cleaned) and answers the error; a retry finishes the job.
//!
//! The HTTP routes use this module; so do the sweep and offboarding handlers (docs/operations.md).

use std::time::Duration;

use snapwake::agentkit::types::{
    DeleteSession, DeleteSessionSnapshot, Filter, ListSessionSnapshots, ListSessions,
};
use snapwake::agentkit::{list_all, AgentKit};
use snapwake::deadline::Deadline;
use snapwake::domain::Description;
use snapwake::domain::{AgentKey, AgentRecord, WakeState};
use snapwake::error::Error;
use snapwake::identity::SNAPSHOT_AGENT_PREFIX;
use snapwake::lock::{
    self, Acquire, Acquired, AgentLock, Generation, Intent, LockSettings, Written,
};
use snapwake::store::{AgentStore, Changes, Condition, DocumentKey, StoreError};
use snapwake::timestamp::{now_ms, now_s};

mod settings;
mod decision;
mod remembered;

use decision::resting;
pub use decision::{decide, Decision};
pub use settings::{DeleteSettings, TOMBSTONE_TTL_S};
use snapwake::agentkit::pagination::{
    AGENT_SESSION_PAGES as SESSION_PAGES, AGENT_SNAPSHOT_PAGES as SNAPSHOT_PAGES,
};

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

/// What [`Deleter::prune`] did.
#[derive(Debug)]
pub struct Pruned {
    /// Snapshots deleted, the first ones asked for: the rest were not touched.
    pub deleted: usize,
    /// Time ran short before the rest were started.
    pub cut: bool,
    /// `Done` when every deletion started succeeded; else why it stopped.
    pub outcome: Result<Deleted, Error>,
}

impl Pruned {
    fn nothing(outcome: Result<Deleted, Error>) -> Self {
        Pruned {
            deleted: 0,
            cut: false,
            outcome,
        }
    }
}

/// The lock as this caller holds it.
struct Holding {
    held: lock::Held,
    resting: WakeState,
    /// The work under the lock ends before the lease does.
    deadline: Deadline,
    /// When the lease taken ends (near enough: measured after the acquire answered).
    lease_end: Deadline,
}

enum Taken {
    Held(Box<Holding>),
    Gone,
}

/// Deletions over a store and AgentKit.
pub struct Deleter<'a, S, K> {
    store: &'a S,
    agentkit: &'a K,
    settings: &'a DeleteSettings,
}

impl<'a, S: AgentStore, K: AgentKit> Deleter<'a, S, K> {
    pub fn new(store: &'a S, agentkit: &'a K, settings: &'a DeleteSettings) -> Self {
        Deleter {
            store,
            agentkit,
            settings,
        }
    }

    fn lock(&self, deadline: Deadline) -> AgentLock<'a, S> {
        AgentLock::new(self.store, &self.settings.lock, deadline)
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
        self.prune(
            target,
            std::slice::from_ref(snapshot),
            seen,
            if_match,
            None,
            deadline,
        )
        .await
        .outcome
    }

    /// Delete several snapshots of `target` under one tenure of its lock (the retention
    /// sweep prunes this way), in order. Every deletion is idempotent; the first that fails
    /// stops the rest, hands the agent back and is the outcome.
    ///
    /// With `start_by`, a deletion is only started before that instant and while a quarter
    /// of the lease is left; the rest are left for the caller ([`Pruned::cut`]) instead of
    /// being cut off mid-call, so a run that stops early still has time to hand the agent
    /// back, and a long prune takes the lock again rather than outliving its lease.
    pub async fn prune(
        &self,
        target: &DeleteTarget,
        snapshots: &[SnapshotRef],
        seen: Option<AgentRecord>,
        if_match: Option<u64>,
        start_by: Option<Deadline>,
        deadline: Deadline,
    ) -> Pruned {
        let lock = self.lock(deadline);
        let mut held = match self.acquire(&lock, target, seen, if_match).await {
            Ok(Taken::Held(h)) => h,
            Ok(Taken::Gone) => return Pruned::nothing(Ok(Deleted::AlreadyGone)),
            Err(e) => return Pruned::nothing(Err(e)),
        };
        let mut deleted: Vec<&str> = Vec::new();
        let mut result = Ok(());
        let mut cut = false;
        let quarter_lease = self.settings.lock.lease / 4;
        for SnapshotRef {
            tool_id,
            region,
            snapshot_id,
        } in snapshots
        {
            if start_by.is_some_and(|by| by.is_past() || !held.lease_end.allows(quarter_lease)) {
                cut = true;
                break;
            }
            let one = async {
                self.delete_snapshot_call(region, tool_id, snapshot_id, held.deadline)
                    .await?;
                self.remember_deleted(&target.key, snapshot_id).await
            };
            match one.await {
                Ok(()) => deleted.push(snapshot_id),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // The index's copy of the agent's snapshots loses the ones deleted.
        let before = &held.held.record.snapshots;
        let left: Vec<_> = before
            .iter()
            .filter(|s| !deleted.contains(&s.snapshot_id.as_str()))
            .cloned()
            .collect();
        let summaries = (left.len() != before.len()).then_some(left);
        let restored = self.restore(&lock, &mut held, summaries).await;
        let done = Pruned {
            deleted: deleted.len(),
            cut,
            outcome: Ok(Deleted::Done),
        };
        if let Err(e) = result {
            return Pruned {
                outcome: Err(e),
                ..done
            };
        }
        match restored {
            Ok(true) => {}
            // The snapshots are deleted: that is what the caller asked for. The record stays
            // `deleting` until its lease expires (or another caller took it over already).
            Ok(false) => {
                tracing::warn!(agent = %target.key, "snapshots deleted, but the lock was lost")
            }
            Err(e) => {
                tracing::warn!(agent = %target.key, error = %e, "snapshots deleted, but the lock could not be released")
            }
        }
        tracing::info!(agent = %target.key, snapshots = ?deleted, cut, "snapshots deleted");
        done
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
        let lock = self.lock(deadline);
        let mut held = match self.acquire(&lock, target, seen, if_match).await? {
            Taken::Gone => return Ok(Deleted::AlreadyGone),
            Taken::Held(h) => h,
        };
        // The session a wake recorded, in case a listing does not show it yet.
        let recorded = held
            .held
            .record
            .description
            .tool_id
            .clone()
            .zip(held.held.record.session_id.clone())
            .filter(|(t, _)| place.tools.contains(t));
        if let Err(e) = self.clean(target, place, recorded, held.deadline).await {
            if let Err(release) = self.restore(&lock, &mut held, None).await {
                tracing::warn!(agent = %target.key, error = %release, "could not release the lock after a failed delete");
            }
            return Err(e);
        }
        let tombstone = Changes {
            error: Some(None),
            resume_sent_at_ms: Some(None),
            snapshots: Some(Vec::new()),
            expires_at: Some(Some(now_s() + TOMBSTONE_TTL_S)),
            ..Changes::default()
        };
        match lock
            .release(&mut held.held, WakeState::Gone, tombstone)
            .await?
        {
            Written::Done(_) => {
                tracing::info!(agent = %target.key, "agent deleted; tombstone written");
                Ok(Deleted::Done)
            }
            // Our lease ran out and somebody else holds the agent now: we cannot promise it
            // is gone. A retry decides again.
            Written::Lost(_) => Err(Error::AgentBusy {
                detail: "the agent changed while it was being deleted; retry".into(),
                retry_after_s: 1,
            }),
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
        lock: &AgentLock<'_, S>,
        target: &DeleteTarget,
        mut seen: Option<AgentRecord>,
        if_match: Option<u64>,
    ) -> Result<Taken, Error> {
        let how = Acquire {
            state: WakeState::Deleting,
            generation: Generation::Keep,
            lease: self.settings.lock.lease,
            describe: target.describe.clone(),
            poll_until_ms: None,
        };
        for _ in 0..self.settings.lock.max_rounds.max(1) {
            let condition = match decide(&self.settings.lock, seen.as_ref(), if_match)? {
                Decision::Gone => return Ok(Taken::Gone),
                Decision::Acquire(c) => c,
            };
            let resting = resting(seen.as_ref());
            match lock
                .acquire(&target.key, &condition, seen.as_ref(), &how)
                .await?
            {
                Acquired::Held(held) => {
                    return Ok(Taken::Held(Box::new(Holding {
                        held: *held,
                        resting,
                        deadline: lock.deadline().min_after(self.settings.lock.lease),
                        lease_end: Deadline::after(self.settings.lock.lease),
                    })))
                }
                Acquired::Lost(current) => seen = current,
            }
        }
        Err(Error::AgentBusy {
            detail: "too many concurrent changes to the agent; retry".into(),
            retry_after_s: 1,
        })
    }

    /// Hand the agent back in the state it rested in, with `snapshots` as its summaries when
    /// they changed. `Ok(false)`: the lock was lost.
    async fn restore(
        &self,
        lock: &AgentLock<'_, S>,
        holding: &mut Holding,
        snapshots: Option<Vec<snapwake::domain::SnapshotView>>,
    ) -> Result<bool, Error> {
        let changes = Changes {
            snapshots,
            ..Changes::default()
        };
        let written = lock
            .release(&mut holding.held, holding.resting, changes)
            .await?;
        Ok(matches!(written, Written::Done(_)))
    }
}
