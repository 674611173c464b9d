//! The retention sweep (docs/operations.md, "The retention sweep"): an EventBridge schedule
//! (hourly by default) or `snapwake sweep`.
//!
//! For every Tool — snapshot Tools first — it lists everything once, then for each agent:
//!
//! 1. **index**: the agent's record gets what the listing says of it
//!    ([`snapwake::index_sync::index_agent`]): owner, name, Tool, snapshot summaries, a live
//!    session. A pass that read every Tool to its end records the completion, which is what
//!    lets one owner's list trust the owner index;
//! 2. **prune** ([`RetentionPolicy`], `prune`): an agent whose listing shows snapshots the
//!    rule drops (or an idle agent) is locked, and under its lock the decision is taken again
//!    from a fresh listing of it: the way back is never deleted on the word of a listing
//!    minutes old. An idle agent is deleted as a whole. An agent whose lock is held (a wake or
//!    a delete in flight) is skipped this round.
//!
//! A sweep stays inside its invocation: before each Tool, each agent and each deletion it
//! checks the time left, and when it runs short it writes where it stopped in the `SWEEP` /
//! `CURSOR` document and returns; the next run continues from there (a Tool it had started is
//! listed again, the agents finished before the checkpoint skipped; an agent cut off halfway
//! is not finished, and what is left of its pruning is done then). Two sweeps never run at once: a lock document
//! (`LOCK#sweep`) through the same lock discipline as deploy's. A dry run writes nothing at
//! all and reports what it would have done.

use std::time::Duration;

use futures::StreamExt;
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::domain::{AgentKey, Retention, ToolRegistry};
use snapwake::error::Error;
use snapwake::index_sync::{agents_of, index_agent, list_tool, record_completion, tools, Upsert};
use snapwake::index_sync::{Seen, SliceSettings, ToolListing};
use snapwake::invocation::Deadline;
use snapwake::lock::{DocumentAcquired, DocumentLock, LockSettings};
use snapwake::store::{AgentStore, ScheduleStore};

use crate::retention::RetentionPolicy;

mod checkpoint;
mod prune;
pub mod refresh;

use checkpoint::{load, save, save_last, Checkpoint, LastPass, Unconfirmed};
pub use checkpoint::{SweepCounts, SweepReport, CHECKPOINT, LAST_PASS, SWEEP_LOCK};

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
    /// Agents indexed and pruned at once (each under its own lock; the AgentKit budget paces
    /// their calls whatever the number).
    pub concurrency: usize,
    /// How a Tool is listed: in time slices side by side.
    pub slices: SliceSettings,
}

impl Default for SweepSettings {
    fn default() -> Self {
        SweepSettings {
            policy: RetentionPolicy::default(),
            margin: Duration::from_secs(5),
            concurrency: 16,
            slices: SliceSettings::default(),
        }
    }
}

/// Whether a scheduled run that starts a pass every `every` has work now: a pass to continue,
/// or none begun within `every`. The schedule fires more often than passes begin, so that a
/// pass longer than one invocation goes on within its hour.
pub async fn is_due<S: AgentStore + ScheduleStore>(
    store: &S,
    every: Duration,
) -> Result<bool, Error> {
    checkpoint::due(store, every, now_ms()).await
}

/// One run of the sweep.
pub struct Sweep<'a, S, K> {
    pub store: &'a S,
    pub agentkit: &'a K,
    pub registry: &'a ToolRegistry,
    pub lock: &'a LockSettings,
    pub settings: &'a SweepSettings,
    pub progress: &'a dyn SweepProgress,
}

/// Where the agent's snapshots were listed.
pub(super) struct Listed<'l> {
    pub tool_id: &'l str,
    pub region: &'l str,
}

#[derive(Default)]
enum Stop {
    #[default]
    Finished,
    OutOfTime,
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Sweep<'_, S, K> {
    /// Run until the pass is done or `deadline` (less the margin) comes.
    pub async fn run(&self, deadline: Deadline, dry_run: bool) -> Result<SweepReport, Error> {
        let started = tokio::time::Instant::now();
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
                let last = LastPass {
                    started_at_ms: cp.started_at_ms,
                    completed_at_ms: now_ms(),
                };
                save_last(self.store, &last).await;
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
            self.settings.slices,
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
        // Each agent takes its own carried-over deletions along.
        let work: Vec<(AgentKey, Seen, Vec<String>)> = agents
            .into_iter()
            .filter(|(key, _)| resume_after.as_ref().is_none_or(|after| key > after))
            .map(|(key, seen)| {
                let (mine, others): (Vec<Unconfirmed>, Vec<Unconfirmed>) =
                    std::mem::take(&mut cp.unconfirmed)
                        .into_iter()
                        .partition(|u| u.agent == key);
                cp.unconfirmed = others;
                let carried = mine.into_iter().map(|u| u.snapshot_id).collect();
                (key, seen, carried)
            })
            .collect();
        let listing = &listing;
        let keys: Vec<AgentKey> = work.iter().map(|(key, _, _)| key.clone()).collect();
        // Agents side by side, in any order (one slow prune must not hold up the fast ones
        // behind it), but the checkpoint moves past an agent only once every agent before it
        // is done, so a run cut off anywhere leaves none behind it unfinished. Once time runs
        // short, the agents not yet begun answer at once without doing anything.
        let mut outcomes = futures::stream::iter(work.into_iter().enumerate())
            .map(|(i, (key, seen, carried))| async move {
                let done = self
                    .agent(&key, &seen, listing, carried, now, deadline, dry_run)
                    .await;
                (i, done)
            })
            .buffer_unordered(self.settings.concurrency.max(1));
        // Per agent: finished (true), cut off (false), or still going.
        let mut ended: Vec<Option<bool>> = vec![None; keys.len()];
        let mut next = 0;
        while let Some((i, done)) = outcomes.next().await {
            counts.add(&done.counts);
            cp.unconfirmed.extend(done.unconfirmed);
            if done.index_incomplete {
                cp.index_complete = false;
            }
            ended[i] = Some(matches!(done.stop, Stop::Finished));
            // The watermark: past every agent finished in key order, and no further than
            // the first one cut off (the next run lists it again and prunes what is left).
            while let Some(Some(true)) = ended.get(next) {
                counts.seen += 1;
                cp.after = Some(keys[next].clone());
                self.progress.agent(&keys[next]);
                next += 1;
            }
        }
        if next == keys.len() {
            Stop::Finished
        } else {
            Stop::OutOfTime
        }
    }

    /// Index one agent and prune it.
    #[allow(clippy::too_many_arguments)]
    async fn agent(
        &self,
        key: &AgentKey,
        seen: &Seen,
        listing: &ToolListing,
        carried: Vec<String>,
        now: u64,
        deadline: Deadline,
        dry_run: bool,
    ) -> AgentDone {
        let mut done = AgentDone::default();
        if deadline.remaining() < self.settings.margin {
            done.unconfirmed = unconfirmed(key, carried);
            done.stop = Stop::OutOfTime;
            return done;
        }
        let counts = &mut done.counts;
        if !dry_run {
            match index_agent(self.store, key, listing, seen).await {
                Upsert::Written => counts.indexed += 1,
                Upsert::Unchanged => {}
                Upsert::Failed | Upsert::OutOfTime => {
                    counts.errors += 1;
                    done.index_incomplete = true;
                }
            }
        }
        if listing.retention != Retention::Recoverable {
            return done;
        }
        let listed = Listed {
            tool_id: &listing.tool_id,
            region: &listing.region,
        };
        let policy = &self.settings.policy;
        let idle = policy.is_idle(&seen.snapshots, !seen.sessions.is_empty(), now);
        let doomed = policy.to_prune(&seen.snapshots, now).len();
        done.stop = if dry_run {
            counts.pruned += (doomed + carried.len()) as u64;
            counts.idle_deleted += u64::from(idle);
            Stop::Finished
        } else if idle {
            self.delete_idle(key, &listed, counts, deadline).await
        } else if doomed > 0 || !carried.is_empty() {
            self.prune(
                key,
                &listed,
                carried,
                counts,
                &mut done.unconfirmed,
                deadline,
            )
            .await
        } else {
            Stop::Finished
        };
        done
    }
}

/// What one agent's turn in the sweep came to.
#[derive(Default)]
struct AgentDone {
    counts: SweepCounts,
    /// Deletions whose answer the run's end cut off: the next run confirms them.
    unconfirmed: Vec<Unconfirmed>,
    /// Its record could not be written: the pass does not complete the index.
    index_incomplete: bool,
    stop: Stop,
}

fn unconfirmed(key: &AgentKey, carried: Vec<String>) -> Vec<Unconfirmed> {
    carried
        .into_iter()
        .map(|snapshot_id| Unconfirmed {
            agent: key.clone(),
            snapshot_id,
        })
        .collect()
}
