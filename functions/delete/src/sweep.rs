//! The retention sweep (docs/operations.md, "The retention sweep"): an EventBridge schedule
//! (hourly by default) or `snapwake sweep`.
//!
//! For every Tool — snapshot Tools first — it lists everything once, then for each agent:
//!
//! 1. **index**: the agent's record gets what the listing says of it
//!    ([`snapwake::index_sync::index_agent`]): owner, name, Tool, snapshot summaries, a live
//!    session. A pass that read every Tool to its end records the completion, which is what
//!    lets one owner's list trust the owner index;
//! 2. **prune** ([`RetentionPolicy`]): the snapshots the policy drops, deleted under the
//!    agent's lock exactly as a snapshot delete does; an agent whose lock is held (a wake or a
//!    delete in flight) is skipped this round.
//!
//! A sweep stays inside its invocation: before each Tool, each agent and each deletion it
//! checks the time left, and when it runs short it writes where it stopped in the `SWEEP` /
//! `CURSOR` document and returns; the next run continues from there (a Tool it had started is
//! listed again, the agents finished before the checkpoint skipped; an agent cut off halfway
//! is not finished, and what is left of its pruning is done then). Two sweeps never run at once: a lock document
//! (`LOCK#sweep`) through the same lock discipline as deploy's. A dry run writes nothing at
//! all and reports what it would have done.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use snapwake::agentkit::AgentKit;
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, Retention, ToolRegistry};
use snapwake::error::Error;
use snapwake::identity::user_session_id;
use snapwake::index_sync::{agents_of, index_agent, list_tool, record_completion, tools, Upsert};
use snapwake::lock::{DocumentAcquired, DocumentLock, LockSettings};
use snapwake::store::{AgentStore, DocumentKey, StoreError};
use snapwake::timestamp::now_ms;

use crate::deletion::{DeleteTarget, Deleted, Deleter, SnapshotRef};
use crate::retention::RetentionPolicy;
use crate::DeleteSettings;

/// Where an interrupted sweep picks up.
pub const CHECKPOINT: DocumentKey<'static> = DocumentKey {
    pk: "SWEEP",
    sk: "CURSOR",
};

/// One sweep at a time.
pub const SWEEP_LOCK: DocumentKey<'static> = DocumentKey {
    pk: "LOCK#sweep",
    sk: "LOCK",
};

/// What a sweep counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepCounts {
    /// Agents seen on the Tools.
    pub seen: u64,
    /// Records created or brought up to date.
    pub indexed: u64,
    /// Snapshots deleted (a dry run: that would be).
    pub pruned: u64,
    /// Agents with snapshots to prune whose lock was held: left for the next round.
    pub skipped: u64,
    /// Tools that could not be listed, records that could not be written, deletions that
    /// failed.
    pub errors: u64,
}

impl SweepCounts {
    fn add(&mut self, other: &SweepCounts) {
        self.seen += other.seen;
        self.indexed += other.indexed;
        self.pruned += other.pruned;
        self.skipped += other.skipped;
        self.errors += other.errors;
    }
}

/// What one run of the sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// This run's counts.
    #[serde(flatten)]
    pub counts: SweepCounts,
    /// The whole pass, across the runs it took.
    pub pass: SweepCounts,
    /// The pass finished in this run (else a checkpoint says where the next run goes on).
    pub completed: bool,
    /// This run continued a pass an earlier run had checkpointed.
    pub resumed: bool,
    /// Another sweep held the lock: this run did nothing.
    pub already_running: bool,
    pub dry_run: bool,
    /// The Tools the pass covers.
    pub tools: usize,
    pub duration_ms: u64,
}

/// The `SWEEP` / `CURSOR` document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Checkpoint {
    started_at_ms: u64,
    /// Tools finished in this pass.
    done: Vec<String>,
    /// The Tool being swept when the last run stopped, and the last agent it finished there.
    tool: Option<String>,
    after: Option<AgentKey>,
    /// Every Tool listed to its end and every record written so far in this pass.
    index_complete: bool,
    totals: SweepCounts,
    /// Deletions on `tool` the last run started but whose answer its deadline cut off:
    /// AgentKit may have carried them out. The next run sends each one again
    /// (docs/operations.md, "Time").
    #[serde(default)]
    unconfirmed: Vec<Unconfirmed>,
}

/// A deletion whose answer a run's deadline cut off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Unconfirmed {
    agent: AgentKey,
    snapshot_id: String,
}

/// What a sweep reports as it goes (the CLI draws progress bars; Lambda logs).
pub trait SweepProgress: Sync {
    /// A Tool was listed: `agents` to go through.
    fn tool(&self, _tool_id: &str, _agents: usize) {}
    /// One agent is done.
    fn agent(&self, _key: &AgentKey) {}
}

/// How the sweep runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepSettings {
    pub policy: RetentionPolicy,
    /// The time kept back at the end of an invocation to write the checkpoint and answer: an
    /// agent or a deletion is only started with this much left, a Tool with twice this. It
    /// should exceed one AgentKit call, so that the last deletion started finishes.
    pub margin: Duration,
}

impl Default for SweepSettings {
    fn default() -> Self {
        SweepSettings {
            policy: RetentionPolicy::default(),
            margin: Duration::from_secs(5),
        }
    }
}

/// One run of the sweep.
pub struct Sweep<'a, S, K> {
    pub store: &'a S,
    pub agentkit: &'a K,
    pub registry: &'a ToolRegistry,
    pub delete: &'a DeleteSettings,
    pub settings: &'a SweepSettings,
    pub progress: &'a dyn SweepProgress,
}

enum Stop {
    Finished,
    OutOfTime,
}

impl<S: AgentStore, K: AgentKit> Sweep<'_, S, K> {
    /// Run until the pass is done or `deadline` (less the margin) comes.
    pub async fn run(&self, deadline: Deadline, dry_run: bool) -> Result<SweepReport, Error> {
        let started = std::time::Instant::now();
        let lock_settings = LockSettings::default();
        let lock = DocumentLock::new(self.store, SWEEP_LOCK, &lock_settings);
        let hold = if dry_run {
            None
        } else {
            match lock.acquire(deadline.remaining()).await? {
                DocumentAcquired::Held(h) => Some(h),
                DocumentAcquired::Busy { .. } => {
                    tracing::info!("sweep: another sweep holds the lock");
                    return Ok(SweepReport {
                        already_running: true,
                        duration_ms: started.elapsed().as_millis() as u64,
                        ..SweepReport::default()
                    });
                }
            }
        };
        let result = self.pass(deadline, dry_run).await;
        if let Some(hold) = hold {
            if let Err(e) = lock.release(hold).await {
                tracing::warn!(error = %e, "sweep: could not release its lock");
            }
        }
        let mut report = result?;
        report.duration_ms = started.elapsed().as_millis() as u64;
        tracing::info!(
            seen = report.counts.seen,
            indexed = report.counts.indexed,
            pruned = report.counts.pruned,
            skipped = report.counts.skipped,
            errors = report.counts.errors,
            completed = report.completed,
            resumed = report.resumed,
            dry_run,
            "sweep"
        );
        Ok(report)
    }

    async fn pass(&self, deadline: Deadline, dry_run: bool) -> Result<SweepReport, Error> {
        let (mut checkpoint, version) = if dry_run {
            (None, 0)
        } else {
            load(self.store).await?
        };
        let resumed = checkpoint.is_some();
        let mut cp = checkpoint.take().unwrap_or_else(|| Checkpoint {
            started_at_ms: now_ms(),
            index_complete: true,
            ..Checkpoint::default()
        });
        let all = tools(self.registry);
        let mut counts = SweepCounts::default();
        let mut stop = Stop::Finished;
        for (kind, tool, retention) in &all {
            if cp.done.contains(tool) {
                continue;
            }
            if deadline.remaining() < self.settings.margin * 2 {
                stop = Stop::OutOfTime;
                break;
            }
            match self
                .sweep_tool(
                    &mut cp,
                    (*kind, tool, *retention),
                    &mut counts,
                    deadline,
                    dry_run,
                )
                .await
            {
                Stop::Finished => {
                    cp.done.push(tool.clone());
                    cp.tool = None;
                    cp.after = None;
                }
                Stop::OutOfTime => {
                    stop = Stop::OutOfTime;
                    break;
                }
            }
        }
        cp.totals.add(&counts);
        let completed = matches!(stop, Stop::Finished);
        if !dry_run {
            if completed {
                if cp.index_complete {
                    record_completion(self.store, all.iter().map(|(_, t, _)| t.clone()).collect())
                        .await?;
                }
                // The next run starts a new pass.
                save(self.store, None, version).await?;
            } else {
                save(self.store, Some(&cp), version).await?;
            }
        }
        Ok(SweepReport {
            counts,
            pass: cp.totals,
            completed,
            resumed,
            already_running: false,
            dry_run,
            tools: all.len(),
            duration_ms: 0,
        })
    }

    /// List one Tool and go through its agents from the checkpoint on.
    async fn sweep_tool(
        &self,
        cp: &mut Checkpoint,
        (kind, tool, retention): (snapwake::domain::Kind, &str, Retention),
        counts: &mut SweepCounts,
        deadline: Deadline,
        dry_run: bool,
    ) -> Stop {
        let listing = match list_tool(
            self.agentkit,
            self.registry,
            (kind, tool, retention),
            deadline,
        )
        .await
        {
            Ok(l) => l,
            // No region knows the Tool: it holds nothing.
            Err(e) if e.is_not_found() => return Stop::Finished,
            Err(e) => {
                tracing::warn!(tool_id = tool, error = %e, "sweep: cannot list the Tool");
                counts.errors += 1;
                cp.index_complete = false;
                return Stop::Finished;
            }
        };
        let resuming_here = cp.tool.as_deref() == Some(tool);
        let resume_after = resuming_here.then(|| cp.after.clone()).flatten();
        let listed: std::collections::HashSet<&str> = listing
            .snapshots
            .iter()
            .filter_map(|s| s.snapshot_id.as_deref())
            .collect();
        // The last run's cut-off deletions on this Tool that are no longer listed: AgentKit
        // carried them out, but nobody counted them or took them out of the record's
        // summaries. Each is sent again with its agent below (a deletion is idempotent: a
        // snapshot already gone answers NotFound, a success), so the pass ends as one
        // uninterrupted run would. One still listed is deleted again anyway if still due.
        cp.unconfirmed
            .retain(|u| resuming_here && !listed.contains(u.snapshot_id.as_str()));
        cp.tool = Some(tool.to_string());
        let agents = agents_of(&listing);
        self.progress.tool(tool, agents.len());
        let now = now_ms();
        for (key, seen) in agents {
            if resume_after.as_ref().is_some_and(|after| key <= *after) {
                continue;
            }
            if deadline.remaining() < self.settings.margin {
                return Stop::OutOfTime;
            }
            if !dry_run {
                match index_agent(self.store, &key, &listing, &seen).await {
                    Upsert::Written => counts.indexed += 1,
                    Upsert::Unchanged => {}
                    Upsert::Failed | Upsert::OutOfTime => {
                        counts.errors += 1;
                        cp.index_complete = false;
                    }
                }
            }
            if retention == Retention::Recoverable {
                let awake = !seen.sessions.is_empty();
                let doomed = self.settings.policy.to_prune(&seen.snapshots, awake, now);
                let snapshot_ref = |snapshot_id: String| SnapshotRef {
                    tool_id: listing.tool_id.clone(),
                    region: listing.region.clone(),
                    snapshot_id,
                };
                // The carried-over deletions first: they only need an answer. Until they
                // have one they stay in the checkpoint (`prune` puts back what it did not
                // get to).
                let (mine, others): (Vec<Unconfirmed>, Vec<Unconfirmed>) =
                    std::mem::take(&mut cp.unconfirmed)
                        .into_iter()
                        .partition(|u| u.agent == key);
                cp.unconfirmed = others;
                let carried: Vec<&str> = mine.iter().map(|u| u.snapshot_id.as_str()).collect();
                let refs: Vec<SnapshotRef> = carried
                    .iter()
                    .map(|id| id.to_string())
                    .chain(doomed.iter().filter_map(|s| s.snapshot_id.clone()))
                    .map(snapshot_ref)
                    .collect();
                if dry_run {
                    counts.pruned += refs.len() as u64;
                } else if let Stop::OutOfTime = self
                    .prune(&key, &refs, &carried, counts, &mut cp.unconfirmed, deadline)
                    .await
                {
                    // The agent is not done: the next run lists it again and prunes what is
                    // left of it (what was deleted is no longer listed).
                    return Stop::OutOfTime;
                }
            }
            counts.seen += 1;
            cp.after = Some(key.clone());
            self.progress.agent(&key);
        }
        Stop::Finished
    }

    /// Delete `refs` under the agent's lock; a held lock skips the agent this round.
    /// `OutOfTime`: the run's time ran short before all of them were deleted. What the next
    /// run must then settle goes into `unconfirmed`: a deletion the deadline cut off (its
    /// outcome unknown: AgentKit may have carried it out), and those of `carried` (cut off in
    /// an earlier run) this run did not get to.
    async fn prune(
        &self,
        key: &AgentKey,
        refs: &[SnapshotRef],
        carried: &[&str],
        counts: &mut SweepCounts,
        unconfirmed: &mut Vec<Unconfirmed>,
        deadline: Deadline,
    ) -> Stop {
        let mut rest = refs;
        let mut cut_off = false;
        let stop = self
            .prune_until(key, &mut rest, &mut cut_off, counts, deadline)
            .await;
        if let Stop::OutOfTime = stop {
            for (i, r) in rest.iter().enumerate() {
                if (cut_off && i == 0) || carried.contains(&r.snapshot_id.as_str()) {
                    unconfirmed.push(Unconfirmed {
                        agent: key.clone(),
                        snapshot_id: r.snapshot_id.clone(),
                    });
                }
            }
        }
        stop
    }

    /// [`Self::prune`]'s deletions, in order: `rest` keeps those not confirmed; `cut_off`
    /// says the first of them failed (its outcome unknown).
    async fn prune_until(
        &self,
        key: &AgentKey,
        rest: &mut &[SnapshotRef],
        cut_off: &mut bool,
        counts: &mut SweepCounts,
        deadline: Deadline,
    ) -> Stop {
        let target = DeleteTarget {
            key: key.clone(),
            user_session_id: user_session_id(&key.agent_id).map(str::to_string),
            describe: None,
        };
        let deleter = Deleter::new(self.store, self.agentkit, self.delete);
        // The last deletion started has the margin to finish, and the run to hand back.
        let start_by = Deadline::at(
            deadline
                .instant()
                .checked_sub(self.settings.margin)
                .unwrap_or_else(tokio::time::Instant::now),
        );
        while !rest.is_empty() {
            let seen = match self.store.get(key).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(agent = %key, error = %e, "sweep: cannot read the record");
                    counts.errors += 1;
                    return self.out_of_time_or(deadline, Stop::Finished);
                }
            };
            let pruned = deleter
                .prune(&target, rest, seen, None, Some(start_by), deadline)
                .await;
            counts.pruned += pruned.deleted as u64;
            *rest = &rest[pruned.deleted.min(rest.len())..];
            match pruned.outcome {
                Ok(Deleted::AlreadyGone) => return Stop::Finished,
                Ok(Deleted::Done) if !pruned.cut => return Stop::Finished,
                // The lease ran short with time left in the run: take the lock again for
                // the rest, as long as the last tenure got somewhere.
                Ok(Deleted::Done) if pruned.deleted > 0 => {
                    if deadline.remaining() < self.settings.margin {
                        return Stop::OutOfTime;
                    }
                }
                Ok(Deleted::Done) => return Stop::OutOfTime,
                Err(Error::AgentBusy { .. }) => {
                    tracing::info!(agent = %key, "sweep: the agent is held; pruning it next round");
                    counts.skipped += 1;
                    return Stop::Finished;
                }
                Err(e) => {
                    tracing::warn!(agent = %key, error = %e, "sweep: pruning failed");
                    counts.errors += 1;
                    // A deletion the deadline cut off is the run's end, not the agent's.
                    *cut_off = true;
                    return self.out_of_time_or(deadline, Stop::Finished);
                }
            }
        }
        Stop::Finished
    }

    fn out_of_time_or(&self, deadline: Deadline, otherwise: Stop) -> Stop {
        if deadline.remaining() < self.settings.margin {
            Stop::OutOfTime
        } else {
            otherwise
        }
    }
}

/// The checkpoint of an unfinished pass, and the document's version.
async fn load<S: AgentStore>(store: &S) -> Result<(Option<Checkpoint>, u64), Error> {
    let Some(doc) = store.get_document(CHECKPOINT).await? else {
        return Ok((None, 0));
    };
    let cp = serde_json::from_value::<Option<Checkpoint>>(doc.value).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "sweep: unreadable checkpoint; starting a new pass");
        None
    });
    Ok((cp, doc.version))
}

/// Write the checkpoint (`None`: the pass is over). Only the holder of the sweep lock writes
/// it, so a conflict means the document changed under an expired lock: the next pass sorts
/// it out.
async fn save<S: AgentStore>(
    store: &S,
    cp: Option<&Checkpoint>,
    version: u64,
) -> Result<(), Error> {
    let value = serde_json::to_value(cp).map_err(|e| Error::Internal(e.to_string()))?;
    match store.put_document(CHECKPOINT, &value, version, None).await {
        Ok(_) => Ok(()),
        Err(StoreError::DocumentConflict { .. }) => {
            tracing::warn!("sweep: the checkpoint changed under this run; leaving it");
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}
