//! Offboarding (docs/operations.md, "Offboarding"): an EventBridge event `detail-type:
//! "snapwake.owner.offboarded"`, `detail: {"owner"}`, or `snapwake offboard OWNER`, deletes
//! every agent of that owner exactly as `DELETE /v1/agents/{kind}/{agent_id}` does — session
//! ended, snapshots deleted, tombstone written.
//!
//! The owner's agents are found three ways, so none is missed: the owner index (both owner
//! keys, every page), every snapshot of every snapshot Tool whose UserSessionId is the
//! owner's, and every live session of every Tool whose UserSessionId is the owner's (metadata
//! is free text; the id's prefix is the proof, as everywhere). An agent held by a wake or a
//! delete is tried again after its `Retry-After`, a few times within the invocation's time.
//!
//! It never gives up: before deleting anything it records the owner's progress
//! ([`snapwake::offboarding`]), which makes every wake of the owner's agents answer 410, and
//! puts the owner on the pending list; what it could not delete (held, or failed) is recorded
//! as left, and every sweep finishes what is left ([`finish`]) until nothing is. Events arrive
//! at least once: an agent already tombstoned counts as done, so a redelivered event finds
//! nothing left and succeeds.
//!
//! It is finished only after a listing that began [`offboarding::ADMITTED_FOR`] after it was
//! accepted (`Progress::may_finish`): a create or a wake admitted a moment before may write its
//! record after the first listing, and would otherwise escape. The event's run lists at once
//! and deletes everything it finds; the next sweep lists again and finishes it (the owner's
//! wakes answer 410 meanwhile). A listing that fails (AgentKit cannot list a Tool) leaves the
//! offboarding pending with what it knew: an error for this run, another listing for the next.
//!
//! Only from whom it should come ([`sources`]): an event is accepted only from the configured
//! sources, checked here as well as by the EventBridge rule.

mod find;
mod finish;
pub mod sources;

use std::time::Duration;

use serde::Serialize;
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::domain::{AgentKey, AgentRecord, Retention, ToolRegistry, WakeState};
use snapwake::error::Error;
use snapwake::invocation::Deadline;
use snapwake::lock::LockSettings;
use snapwake::offboarding;
use snapwake::store::{AgentStore, ScheduleStore};

use crate::deletion::{AgentPlace, DeleteTarget, Deleted, Deleter};

/// How many times an agent held by someone else is tried within one run.
const BUSY_ROUNDS: usize = 3;

/// Whom offboarding events are accepted from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffboardSettings {
    /// The EventBridge `source` values allowed (`SNAPWAKE_OFFBOARDING_SOURCES`).
    pub sources: Vec<String>,
}

impl Default for OffboardSettings {
    fn default() -> Self {
        OffboardSettings {
            sources: vec![snapwake::config::DEFAULT_OFFBOARDING_SOURCE.to_string()],
        }
    }
}

/// What happened to one agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Deleted,
    /// A tombstone was there already.
    AlreadyGone,
    /// A dry run: it would be deleted.
    WouldDelete,
    Failed,
}

/// What an offboarding did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OffboardReport {
    pub owner: String,
    /// Agents of the owner found (tombstones included).
    pub found: usize,
    pub deleted: usize,
    pub already_gone: usize,
    /// Agents not deleted in this run (held, or failed): recorded, and finished by the next
    /// sweep.
    pub failed: usize,
    /// What is left of the owner's agents after this run (0: the offboarding is finished).
    pub left: usize,
    pub dry_run: bool,
    /// Every agent and what happened to it.
    pub agents: Vec<(AgentKey, Outcome)>,
    pub duration_ms: u64,
}

/// What offboarding reports as it goes.
pub trait OffboardProgress: Sync {
    fn found(&self, _agents: usize) {}
    fn agent(&self, _key: &AgentKey, _outcome: Outcome) {}
}

/// What finishing the pending offboardings did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FinishReport {
    /// Owners whose offboarding was pending.
    pub owners: usize,
    /// Agents deleted now.
    pub deleted: usize,
    /// Agents still left (held again, or failed).
    pub left: usize,
    /// Offboardings finished now.
    pub finished: usize,
    /// Owners whose agents could not be listed this time (AgentKit or the table failed):
    /// still pending.
    pub unlisted: usize,
}

/// One offboarding of one owner.
pub struct Offboard<'a, S, K> {
    pub store: &'a S,
    pub agentkit: &'a K,
    pub registry: &'a ToolRegistry,
    pub lock: &'a LockSettings,
    pub progress: &'a dyn OffboardProgress,
}

/// Where an agent was found in AgentKit: its Tool and region.
#[derive(Clone, Debug, Default)]
struct Found {
    record: Option<AgentRecord>,
    home: Option<(String, String, Retention)>,
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Offboard<'_, S, K> {
    pub async fn run(
        &self,
        owner: &str,
        deadline: Deadline,
        dry_run: bool,
    ) -> Result<OffboardReport, Error> {
        let started = tokio::time::Instant::now();
        if owner.trim().is_empty() {
            return Err(Error::bad_request("offboarding needs an owner"));
        }
        if dry_run {
            return self.dry_run(owner, deadline, started).await;
        }
        // Recorded before anything is deleted: from now on a wake of the owner's agents
        // answers 410, and the sweep knows to finish this offboarding should this run not.
        let mut progress = offboarding::progress(self.store, owner)
            .await?
            .filter(|p| !p.is_finished())
            .unwrap_or_else(|| offboarding::start(owner));
        progress.runs += 1;
        offboarding::record(self.store, &progress).await?;
        let mut report = OffboardReport {
            owner: owner.to_string(),
            ..OffboardReport::default()
        };
        if let Err(e) = self
            .list_and_delete(&mut progress, &mut report, deadline)
            .await
        {
            // What it knew stays left; the next run lists again.
            offboarding::record(self.store, &progress).await?;
            return Err(e);
        }
        progress.finish_if_done(now_ms());
        report.left = progress.left.len();
        offboarding::record(self.store, &progress).await?;
        report.duration_ms = started.elapsed().as_millis() as u64;
        tracing::info!(
            owner = %report.owner,
            found = report.found,
            deleted = report.deleted,
            already_gone = report.already_gone,
            failed = report.failed,
            left = report.left,
            finished = progress.is_finished(),
            "offboarding"
        );
        Ok(report)
    }

    /// What an offboarding would delete now.
    async fn dry_run(
        &self,
        owner: &str,
        deadline: Deadline,
        started: tokio::time::Instant,
    ) -> Result<OffboardReport, Error> {
        let agents = self.find(owner, deadline).await?;
        self.progress.found(agents.len());
        let mut report = OffboardReport {
            owner: owner.to_string(),
            found: agents.len(),
            dry_run: true,
            ..OffboardReport::default()
        };
        for (key, found) in agents {
            let outcome = if found
                .record
                .as_ref()
                .is_some_and(|r| r.state == WakeState::Gone)
            {
                report.already_gone += 1;
                Outcome::AlreadyGone
            } else {
                Outcome::WouldDelete
            };
            self.progress.agent(&key, outcome);
            report.agents.push((key, outcome));
        }
        report.duration_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }

    /// One complete listing of everything `progress`'s owner has, and every agent found (and
    /// every one left from before) deleted: `progress` then says what is left, and when the
    /// listing began. A listing that fails leaves `progress` as it was.
    pub(super) async fn list_and_delete(
        &self,
        progress: &mut offboarding::Progress,
        report: &mut OffboardReport,
        deadline: Deadline,
    ) -> Result<(), Error> {
        let began = now_ms();
        let mut agents = self.find(&progress.owner, deadline).await?;
        for key in &progress.left {
            agents.entry(key.clone()).or_default();
        }
        // What this run dealt with already (a second listing finds them again, as tombstones).
        agents.retain(|key, _| {
            !report
                .agents
                .iter()
                .any(|(k, o)| k == key && matches!(o, Outcome::Deleted | Outcome::AlreadyGone))
        });
        self.progress.found(agents.len());
        let mut left = Vec::new();
        for (key, mut found) in agents {
            if found.record.is_none() {
                found.record = self.store.get(&key).await?;
            }
            let outcome = if found
                .record
                .as_ref()
                .is_some_and(|r| r.state == WakeState::Gone)
            {
                Outcome::AlreadyGone
            } else {
                self.delete(&key, found, deadline).await
            };
            match outcome {
                Outcome::Deleted => report.deleted += 1,
                Outcome::AlreadyGone => report.already_gone += 1,
                Outcome::Failed => {
                    report.failed += 1;
                    left.push(key.clone());
                }
                Outcome::WouldDelete => {}
            }
            self.progress.agent(&key, outcome);
            report.agents.retain(|(k, _)| k != &key);
            report.agents.push((key, outcome));
        }
        report.found = report.agents.len();
        progress.left = left;
        progress.listed_at_ms = Some(began);
        Ok(())
    }

    /// Delete one agent as the HTTP route does, waiting out a lock held by someone else.
    async fn delete(&self, key: &AgentKey, found: Found, deadline: Deadline) -> Outcome {
        let place = self.place(key, &found);
        let target = DeleteTarget::of(key);
        let deleter = Deleter::new(self.store, self.agentkit, self.lock);
        let mut seen = found.record;
        for round in 0..BUSY_ROUNDS {
            match deleter
                .delete_agent(&target, &place, seen.clone(), None, deadline)
                .await
            {
                Ok(Deleted::Done) => return Outcome::Deleted,
                Ok(Deleted::AlreadyGone | Deleted::NotIdle) => return Outcome::AlreadyGone,
                Err(Error::AgentBusy { retry_after_s, .. }) if round + 1 < BUSY_ROUNDS => {
                    let pause = Duration::from_secs(retry_after_s.max(1));
                    if !deadline.allows(pause) {
                        break;
                    }
                    tokio::time::sleep(pause).await;
                    seen = match self.store.get(key).await {
                        Ok(r) => r,
                        Err(e) => {
                            tracing::warn!(agent = %key, error = %e, "offboarding: cannot read the record");
                            return Outcome::Failed;
                        }
                    };
                }
                Err(e) => {
                    tracing::warn!(agent = %key, error = %e, "offboarding: could not delete the agent");
                    return Outcome::Failed;
                }
            }
        }
        Outcome::Failed
    }

    /// Every Tool of the agent's kind in every region, the one it was found on (or its
    /// record names) first.
    fn place(&self, key: &AgentKey, found: &Found) -> AgentPlace {
        let home = found.home.clone().or_else(|| {
            let r = found.record.as_ref()?;
            Some((
                r.description.tool_id.clone()?,
                r.description.region.clone()?,
                Retention::Recoverable,
            ))
        });
        AgentPlace::of(
            self.registry,
            self.agentkit,
            key.kind,
            home.as_ref().map(|(t, r, _)| (t.as_str(), r.as_str())),
        )
    }
}
