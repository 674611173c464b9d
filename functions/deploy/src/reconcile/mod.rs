//! Deploy (docs/agentkit.md, "Deploy: reconciling the Tools"): reconcile the catalogue of AgentKit
//! Tools like a small `terraform apply`: lock, plan, apply only the differences, wait for
//! readiness, write the registry, report. A second run of an unchanged catalogue writes nothing.
//!
//! Every tool write passes the run's one limiter on each attempt, so the [`Deployer::writer`]
//! client must not retry by itself ([`no_retry_policy`]); the limiter retries throttles.

use std::time::Duration;

use tokio::time::Instant;

use snapwake::agentkit::answer::RetryPolicy;
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::domain::ToolRegistry;
use snapwake::error::Error;
use snapwake::invocation::Deadline;
use snapwake::lock::{DocumentLock, LockSettings};
use snapwake::store::{AgentStore, StoreError};

pub mod apply;
pub mod catalogue;
pub mod limiter;
pub mod lock;
pub mod plan;
mod progress;
pub mod publish;
pub mod report;

pub use catalogue::Catalogue;
pub use limiter::WriteLimiter;
pub use progress::{NoProgress, Progress};
pub use report::{EntryReport, EntryStatus, Report, RunOutcome};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub struct DeployOptions {
    /// Stop after planning and report the plan (no lock, no write).
    #[serde(default)]
    pub dry_run: bool,
    /// Re-purpose a legacy single Tool as the recoverable one (`plan/`).
    #[serde(default)]
    pub migrate_legacy: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeploySettings {
    /// GetTool polling interval while waiting for readiness.
    pub poll_interval: Duration,
    /// Time kept back from the deadline for the registry write, the release and the report.
    pub finish_margin: Duration,
    pub write_spacing: Duration,
}

impl Default for DeploySettings {
    fn default() -> Self {
        DeploySettings {
            poll_interval: Duration::from_secs(5),
            finish_margin: Duration::from_secs(5),
            write_spacing: limiter::WRITE_SPACING,
        }
    }
}

/// The retry policy of the writer client: none (the limiter retries).
pub fn no_retry_policy() -> RetryPolicy {
    RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    }
}

/// One deploy run's ports and desired state.
pub struct Deployer<'a, S, K> {
    pub store: &'a S,
    pub agentkit: &'a K,
    /// Writes: a client without retries of its own.
    pub writer: &'a K,
    pub catalogue: &'a Catalogue,
    pub settings: &'a DeploySettings,
    pub progress: &'a dyn Progress,
}

impl<S: AgentStore, K: AgentKit> Deployer<'_, S, K> {
    async fn plan(
        &self,
        migrate_legacy: bool,
        deadline: Deadline,
    ) -> Result<(Option<ToolRegistry>, plan::Plan), Error> {
        let previous = self.store.get_registry().await?;
        let plan = plan::plan(
            self.agentkit,
            self.catalogue,
            previous.as_ref(),
            migrate_legacy,
            deadline,
        )
        .await?;
        Ok((previous, plan))
    }

    pub async fn run(&self, options: DeployOptions, deadline: Deadline) -> Result<Report, Error> {
        let started = Instant::now();
        let mut report = Report {
            outcome: RunOutcome::Applied,
            dry_run: options.dry_run,
            migrate_legacy: options.migrate_legacy,
            message: None,
            region: None,
            entries: Vec::new(),
            warnings: Vec::new(),
            writes: 0,
            throttles: 0,
            duration_ms: 0,
            registry_written: false,
            registry: None,
        };
        if options.dry_run {
            let (previous, plan) = self.plan(options.migrate_legacy, deadline).await?;
            report.outcome = RunOutcome::Planned;
            report.region = Some(plan.region.clone());
            report.entries = plan.entries.iter().map(plan::Planned::report).collect();
            for e in &report.entries {
                self.progress.planned(e);
            }
            report.warnings = plan.warnings;
            report.registry = previous;
            report.duration_ms = started.elapsed().as_millis() as u64;
            return Ok(report);
        }

        let lock_settings = LockSettings::default();
        let deploy_lock = lock::deploy_lock(self.store, &lock_settings);
        let lock = match deploy_lock.acquire(deadline.remaining()).await? {
            lock::Acquired::Held(lock) => lock,
            lock::Acquired::Busy { lease_until_ms } => {
                report.outcome = RunOutcome::AlreadyRunning;
                report.message = Some(format!(
                    "already running: another deploy holds the lock (lease ends in {} s)",
                    lease_until_ms.saturating_sub(now_ms()).div_ceil(1000)
                ));
                report.duration_ms = started.elapsed().as_millis() as u64;
                return Ok(report);
            }
        };
        let outcome = self
            .locked_run(options, deadline, &mut report, &deploy_lock, lock)
            .await;
        report.duration_ms = started.elapsed().as_millis() as u64;
        outcome.map(|()| report)
    }

    async fn locked_run(
        &self,
        options: DeployOptions,
        deadline: Deadline,
        report: &mut Report,
        deploy_lock: &DocumentLock<'_, S>,
        mut lock: lock::DeployLock,
    ) -> Result<(), Error> {
        let result = self
            .apply_run(options, deadline, report, deploy_lock, &mut lock)
            .await;
        // Release whatever happened; a failed release only delays the next run to the lease.
        if let Err(e) = deploy_lock.release(lock).await {
            tracing::warn!(error = %e, "deploy lock release failed");
        }
        result
    }

    async fn apply_run(
        &self,
        options: DeployOptions,
        deadline: Deadline,
        report: &mut Report,
        deploy_lock: &DocumentLock<'_, S>,
        lock: &mut lock::DeployLock,
    ) -> Result<(), Error> {
        let (previous, plan) = self.plan(options.migrate_legacy, deadline).await?;
        report.region = Some(plan.region.clone());
        report.warnings = plan.warnings.clone();
        for p in &plan.entries {
            self.progress.planned(&p.report());
        }

        let limiter = WriteLimiter::new(self.settings.write_spacing);
        let apply_deadline = Deadline::at(
            deadline
                .instant()
                .checked_sub(self.settings.finish_margin)
                .unwrap_or_else(Instant::now),
        );
        let applier = apply::Applier {
            agentkit: self.agentkit,
            writer: self.writer,
            limiter: &limiter,
            poll_interval: self.settings.poll_interval,
            deadline: apply_deadline,
            progress: self.progress,
        };
        let applied = applier.apply_all(&plan.entries).await;
        report.entries = applied.iter().map(|a| a.report.clone()).collect();
        report.writes = limiter.writes();
        report.throttles = limiter.throttles();

        let mut notes = Vec::new();
        let next = publish::next_registry(
            self.agentkit,
            previous.as_ref(),
            &plan,
            &applied,
            deadline,
            &mut notes,
        )
        .await;
        report.warnings.extend(notes);
        let unchanged = previous
            .as_ref()
            .is_some_and(|p| publish::same_content(p, &next));
        if unchanged {
            report.registry = previous;
            return Ok(());
        }
        if !deploy_lock.confirm(lock, deadline.remaining()).await? {
            report.warnings.push(
                "the deploy lock was taken over (this run outlived its lease); the registry \
                 was not written"
                    .into(),
            );
            return Ok(());
        }
        let expected = previous.as_ref().map_or(0, |p| p.version);
        let written = match self.store.put_registry(&next, expected).await {
            Ok(r) => r,
            Err(StoreError::RegistryConflict { current }) => {
                // Someone wrote it outside a deploy: keep every legacy Tool either side knows.
                let current = current.map(|b| *b).unwrap_or_default();
                let mut merged = next.clone();
                for (kind, theirs) in &current.kinds {
                    let ours = merged.kinds.entry(*kind).or_default();
                    for t in &theirs.legacy_snapshot_tools {
                        if !ours.legacy_snapshot_tools.contains(t)
                            && ours.recoverable.as_ref() != Some(t)
                        {
                            ours.legacy_snapshot_tools.push(t.clone());
                        }
                    }
                }
                report.warnings.push(
                    "the registry changed during the run; written over it, legacy Tools kept"
                        .into(),
                );
                self.store.put_registry(&merged, current.version).await?
            }
            Err(e) => return Err(e.into()),
        };
        tracing::info!(version = written.version, "tool registry written");
        report.registry_written = true;
        report.registry = Some(written);
        Ok(())
    }
}
