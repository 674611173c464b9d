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
//! It knows nothing of them: it imports only the retention rule, which a prune under the
//! lock applies to a fresh listing.
//!
//! - `snapshots`: one snapshot, or several under one tenure (the sweep's prune);
//! - `agent`: a whole agent, in every region its kind's Tools may live in;
//! - `decision`: what the record alone allows; `remembered`: deleted snapshots answered 204.

use snapwake::agentkit::types::{
    DeleteSession, DeleteSessionSnapshot, Filter, ListSessionSnapshots, ListSessions, Snapshot,
};
use snapwake::agentkit::{list_all, AgentKit};
use snapwake::ambient::{now_ms, now_s};
use snapwake::domain::Description;
use snapwake::domain::{AgentKey, AgentRecord, Kind, ToolRegistry, WakeState};
use snapwake::error::Error;
use snapwake::identity::SNAPSHOT_AGENT_PREFIX;
use snapwake::invocation::Deadline;
use snapwake::lock::{self, Acquire, Acquired, AgentLock, Generation, LockSettings, Written};
use snapwake::store::Within;
use snapwake::store::{AgentStore, Changes, DocumentKey, ScheduleStore, StoreError};

use crate::retention::RetentionPolicy;

mod agent;
mod decision;
mod remembered;
mod snapshots;

pub use decision::{decide, Decision};
use decision::{resting, Resting};
use snapwake::agentkit::port::{
    AGENT_SESSION_PAGES as SESSION_PAGES, AGENT_SNAPSHOT_PAGES as SNAPSHOT_PAGES,
};

/// How long a tombstone (and the memory of a deleted snapshot) answers: 30 days.
pub const TOMBSTONE_TTL_S: i64 = 30 * 24 * 3600;

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
    /// The target for `key`, with its UserSessionId read from the id.
    pub fn of(key: &AgentKey) -> Self {
        DeleteTarget {
            key: key.clone(),
            user_session_id: snapwake::identity::user_session_id(&key.agent_id).map(str::to_string),
            describe: None,
        }
    }

    /// The SnapshotId of a `snapshot-<id>` agent.
    fn own_snapshot_id(&self) -> Option<&str> {
        self.key.agent_id.strip_prefix(SNAPSHOT_AGENT_PREFIX)
    }
}

/// Where an agent may have sessions and snapshots: every Tool of its kind, each in every
/// region (a Tool lives in one region; the others answer NotFound, which is skipped), the
/// agent's own Tool and region first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentPlace {
    pub tools: Vec<String>,
    pub regions: Vec<String>,
}

impl AgentPlace {
    /// Every Tool of `kind` in every region, `home` (Tool, region) first.
    pub fn of(
        registry: &ToolRegistry,
        agentkit: &impl AgentKit,
        kind: Kind,
        home: Option<(&str, &str)>,
    ) -> Self {
        let mut tools: Vec<String> = home.iter().map(|(t, _)| t.to_string()).collect();
        if let Some(kind_tools) = registry.kind(kind) {
            for t in kind_tools.all_tools() {
                if !tools.iter().any(|have| have == t) {
                    tools.push(t.to_string());
                }
            }
        }
        let mut regions: Vec<String> = home.iter().map(|(_, r)| r.to_string()).collect();
        for r in snapwake::locate::regions(registry, agentkit) {
            if !regions.iter().any(|have| have == r) {
                regions.push(r.to_string());
            }
        }
        AgentPlace { tools, regions }
    }
}

/// One snapshot and where it lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotRef {
    pub tool_id: String,
    pub region: String,
    pub snapshot_id: String,
}

/// What a prune deletes, decided under the agent's lock.
#[derive(Clone, Copy, Debug)]
pub enum Choice<'r> {
    /// These snapshots (the caller checked them against a listing of the agent).
    These(&'r [SnapshotRef]),
    /// What `policy` drops from a fresh listing of the agent's snapshots on this Tool, read
    /// under the lock; and `carried` (deletions an earlier run started but never saw
    /// answered) when that listing no longer shows them, so that they are confirmed.
    ByPolicy {
        tool_id: &'r str,
        region: &'r str,
        policy: &'r RetentionPolicy,
        carried: &'r [String],
    },
}

/// What a deletion did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// This call deleted it (or found AgentKit had already).
    Done,
    /// A tombstone says the agent was deleted already: nothing to do.
    AlreadyGone,
    /// An idle-agent delete found the agent in use again under the lock: nothing deleted.
    NotIdle,
}

/// What [`Deleter::prune`] did.
#[derive(Debug, Default)]
pub struct Pruned {
    /// Snapshots deleted (confirmed by AgentKit), in order.
    pub deleted: Vec<String>,
    /// Time ran short before the rest were started.
    pub cut: bool,
    /// The deletion whose call failed: its outcome is unknown (AgentKit may have acted).
    pub unanswered: Option<String>,
    /// `Done` when every deletion started succeeded; else why it stopped.
    pub outcome: Option<Result<Deleted, Error>>,
}

impl Pruned {
    fn nothing(outcome: Result<Deleted, Error>) -> Self {
        Pruned {
            outcome: Some(outcome),
            ..Pruned::default()
        }
    }

    /// Why it stopped (`Done` when nothing went wrong).
    pub fn outcome(&mut self) -> Result<Deleted, Error> {
        self.outcome.take().unwrap_or(Ok(Deleted::Done))
    }
}

/// The lock as this caller holds it.
struct Holding {
    held: lock::Held,
    resting: Resting,
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
    lock: &'a LockSettings,
}

impl<'a, S: AgentStore + ScheduleStore, K: AgentKit> Deleter<'a, S, K> {
    pub fn new(store: &'a S, agentkit: &'a K, lock: &'a LockSettings) -> Self {
        Deleter {
            store,
            agentkit,
            lock,
        }
    }

    fn lock(&self, deadline: Deadline) -> AgentLock<'a, S> {
        AgentLock::new(Within::new(self.store, deadline), self.lock)
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
            lease: self.lock.lease,
            describe: target.describe.clone(),
            poll_until_ms: None,
        };
        for _ in 0..self.lock.max_rounds.max(1) {
            let condition = match decide(self.lock, seen.as_ref(), if_match)? {
                Decision::Gone => return Ok(Taken::Gone),
                Decision::Acquire(c) => c,
            };
            let resting = resting(seen.as_ref(), snapwake::ambient::now_ms());
            match lock
                .acquire(&target.key, &condition, seen.as_ref(), &how)
                .await?
            {
                Acquired::Held(held) => {
                    return Ok(Taken::Held(Box::new(Holding {
                        held: *held,
                        resting,
                        deadline: lock.deadline().min_after(self.lock.lease),
                        lease_end: Deadline::after(self.lock.lease),
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
            ..holding.resting.changes.clone()
        };
        let written = lock
            .release(&mut holding.held, holding.resting.state, changes)
            .await?;
        Ok(matches!(written, Written::Done(_)))
    }
}
