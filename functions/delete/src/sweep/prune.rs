//! The sweep's deletions for one agent, each under the agent's lock and decided again there
//! from a fresh listing (docs/operations.md, "The retention sweep"): the pass's listing only
//! says which agents are worth locking. An idle agent goes as a whole; any other loses the
//! snapshots the retention rule drops, never its way back. A held lock skips the agent this
//! round.

use snapwake::agentkit::AgentKit;
use snapwake::domain::AgentKey;
use snapwake::error::Error;
use snapwake::invocation::Deadline;
use snapwake::store::{AgentStore, ScheduleStore};

use super::checkpoint::{SweepCounts, Unconfirmed};
use super::{Listed, Stop, Sweep};
use crate::deletion::{AgentPlace, Choice, DeleteTarget, Deleted, Deleter};

impl<S: AgentStore + ScheduleStore, K: AgentKit> Sweep<'_, S, K> {
    /// Delete the idle agent as a whole, if it still is idle under its lock.
    pub(super) async fn delete_idle(
        &self,
        key: &AgentKey,
        listed: &Listed<'_>,
        counts: &mut SweepCounts,
        deadline: Deadline,
    ) -> Stop {
        let seen = match self.store.get(key).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(agent = %key, error = %e, "sweep: cannot read the record");
                counts.errors += 1;
                return self.out_of_time_or(deadline, Stop::Finished);
            }
        };
        let place = AgentPlace::of(
            self.registry,
            self.agentkit,
            key.kind,
            Some((listed.tool_id, listed.region)),
        );
        let deleter = Deleter::new(self.store, self.agentkit, self.lock);
        match deleter
            .delete_idle_agent(
                &DeleteTarget::of(key),
                &place,
                seen,
                &self.settings.policy,
                deadline,
            )
            .await
        {
            Ok(Deleted::Done) => {
                tracing::info!(agent = %key, "sweep: idle agent deleted");
                counts.idle_deleted += 1;
            }
            Ok(Deleted::AlreadyGone | Deleted::NotIdle) => {}
            Err(Error::AgentBusy { .. }) => counts.skipped += 1,
            Err(e) => {
                tracing::warn!(agent = %key, error = %e, "sweep: deleting an idle agent failed");
                counts.errors += 1;
            }
        }
        self.out_of_time_or(deadline, Stop::Finished)
    }

    /// Prune the agent under its lock, by the retention rule on a fresh listing of it (and
    /// `carried`: deletions an earlier run's deadline cut off, confirmed now). `OutOfTime`:
    /// the run's time ran short first; what the next run must then settle goes into
    /// `unconfirmed` (a deletion whose answer was cut off, and `carried` ones not confirmed).
    pub(super) async fn prune(
        &self,
        key: &AgentKey,
        listed: &Listed<'_>,
        carried: Vec<String>,
        counts: &mut SweepCounts,
        unconfirmed: &mut Vec<Unconfirmed>,
        deadline: Deadline,
    ) -> Stop {
        let target = DeleteTarget::of(key);
        let deleter = Deleter::new(self.store, self.agentkit, self.lock);
        // The last deletion started has the margin to finish, and the run to hand back.
        let start_by = Deadline::at(
            deadline
                .instant()
                .checked_sub(self.settings.margin)
                .unwrap_or_else(tokio::time::Instant::now),
        );
        let mut carried = carried;
        let stop = loop {
            let seen = match self.store.get(key).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(agent = %key, error = %e, "sweep: cannot read the record");
                    counts.errors += 1;
                    break self.out_of_time_or(deadline, Stop::Finished);
                }
            };
            let choice = Choice::ByPolicy {
                tool_id: listed.tool_id,
                region: listed.region,
                policy: &self.settings.policy,
                carried: &carried,
            };
            let mut pruned = deleter
                .prune(&target, choice, seen, None, Some(start_by), deadline)
                .await;
            counts.pruned += pruned.deleted.len() as u64;
            carried.retain(|c| !pruned.deleted.contains(c));
            match pruned.outcome() {
                Ok(Deleted::AlreadyGone | Deleted::NotIdle) => break Stop::Finished,
                Ok(Deleted::Done) if !pruned.cut => break Stop::Finished,
                // The lease ran short with time left in the run: take the lock again for
                // the rest, as long as the last tenure got somewhere.
                Ok(Deleted::Done) if !pruned.deleted.is_empty() => {
                    if deadline.remaining() < self.settings.margin {
                        break Stop::OutOfTime;
                    }
                }
                Ok(Deleted::Done) => break Stop::OutOfTime,
                Err(Error::AgentBusy { .. }) => {
                    tracing::info!(agent = %key, "sweep: the agent is held; pruning it next round");
                    counts.skipped += 1;
                    break Stop::Finished;
                }
                Err(e) => {
                    tracing::warn!(agent = %key, error = %e, "sweep: pruning failed");
                    counts.errors += 1;
                    // A deletion the deadline cut off is the run's end, not the agent's: its
                    // outcome is unknown, so the next run confirms it.
                    let stop = self.out_of_time_or(deadline, Stop::Finished);
                    if let (Stop::OutOfTime, Some(id)) = (&stop, pruned.unanswered.take()) {
                        if !carried.contains(&id) {
                            carried.push(id);
                        }
                    }
                    break stop;
                }
            }
        };
        if let Stop::OutOfTime = stop {
            unconfirmed.extend(super::unconfirmed(key, carried));
        }
        stop
    }

    pub(super) fn out_of_time_or(&self, deadline: Deadline, otherwise: Stop) -> Stop {
        if deadline.remaining() < self.settings.margin {
            Stop::OutOfTime
        } else {
            otherwise
        }
    }
}
