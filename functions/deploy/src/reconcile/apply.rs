//! Applying a plan (docs/agentkit.md, "Apply and the write limiter"): each entry's steps in
//! order, entries concurrently, every write through the run's one [`WriteLimiter`]. What is not
//! Ready by the deadline is `pending`: the Tool exists and the next run finishes it.

use std::time::Duration;

use snapwake::agentkit::types::{
    AuthorizerConfiguration, CreateTool, GetTool, KeyAuth, NetworkConfiguration, Tool, UpdateTool,
};
use snapwake::agentkit::AgentKit;
use snapwake::invocation::Deadline;

use super::catalogue::{CPU_MILLI, MEMORY_MB, PROJECT_NAME};
use super::limiter::{WriteError, WriteLimiter};
use super::plan::{Origin, Planned, Step};
use super::progress::Progress;
use super::report::{EntryReport, EntryStatus};

pub struct Applier<'a, K> {
    pub agentkit: &'a K,
    /// Writes, through a client that does not retry by itself.
    pub writer: &'a K,
    pub limiter: &'a WriteLimiter,
    pub poll_interval: Duration,
    /// No step starts and no poll waits past this.
    pub deadline: Deadline,
    pub progress: &'a dyn Progress,
}

/// One entry's result: its report line, and whether its Tool is ready to be recorded.
#[derive(Clone, Debug)]
pub struct Applied {
    pub report: EntryReport,
    pub ready: bool,
    pub tool: Option<Tool>,
}

impl<K: AgentKit> Applier<'_, K> {
    pub async fn apply_all(&self, plan: &[Planned]) -> Vec<Applied> {
        futures::future::join_all(plan.iter().map(|p| self.apply(p))).await
    }

    pub async fn apply(&self, planned: &Planned) -> Applied {
        let mut report = planned.report();
        report.steps.clear();
        let mut applied = Applied {
            report,
            ready: false,
            tool: planned.tool.clone(),
        };
        if let Some(why) = &planned.failure {
            applied.report.status = EntryStatus::Failed;
            applied.report.reason = Some(why.clone());
            self.progress.finished(&applied.report);
            return applied;
        }
        let mut tool_id = planned.tool_id.clone();
        let mut wrote = false;
        let mut created = false;
        for step in &planned.steps {
            self.progress.step(&planned.entry.key, &step.label());
            let done = match step {
                Step::CreateTool => match self.create(planned).await {
                    Ok(id) => {
                        tool_id = Some(id.clone());
                        applied.report.tool_id = Some(id);
                        created = true;
                        Ok(())
                    }
                    Err(e) => Err(e),
                },
                Step::EnableSnapshots | Step::SetEnvs(_) => {
                    let request = UpdateTool {
                        tool_id: tool_id.clone().unwrap_or_default(),
                        enable_snapshot: matches!(step, Step::EnableSnapshots).then_some(true),
                        envs: match step {
                            Step::SetEnvs(envs) => Some(envs.clone()),
                            _ => None,
                        },
                    };
                    self.limiter
                        .write(self.writer, &planned.region, &request, self.deadline)
                        .await
                        .map(|_| wrote = true)
                }
                Step::AwaitReady => {
                    let id = tool_id.clone().unwrap_or_default();
                    match self.await_ready(planned, &id).await {
                        Ok(Some(tool)) => {
                            applied.tool = Some(tool);
                            Ok(())
                        }
                        Ok(None) => {
                            applied.report.steps.push(step.label());
                            applied.report.status = EntryStatus::Pending;
                            applied.report.reason = Some(format!(
                                "Tool {id} was not Ready{} before the deadline; the next run \
                                 finishes it",
                                if planned.entry.recoverable {
                                    " with snapshots on"
                                } else {
                                    ""
                                }
                            ));
                            self.progress.finished(&applied.report);
                            return applied;
                        }
                        Err(why) => Err(WriteError::AgentKit(why)),
                    }
                }
            };
            match done {
                Ok(()) => applied.report.steps.push(step.label()),
                Err(WriteError::NoTime) => {
                    applied.report.status = EntryStatus::Pending;
                    applied.report.reason = Some(format!(
                        "no time left for {}; the next run does it",
                        step.label()
                    ));
                    self.progress.finished(&applied.report);
                    return applied;
                }
                Err(WriteError::AgentKit(e)) => {
                    applied.report.status = EntryStatus::Failed;
                    applied.report.reason = Some(format!("{}: {e}", step.label()));
                    self.progress.finished(&applied.report);
                    return applied;
                }
            }
        }
        applied.ready = true;
        applied.report.status = if created {
            EntryStatus::Created
        } else if wrote {
            EntryStatus::Updated
        } else if planned.origin == Origin::Adopted {
            EntryStatus::Adopted
        } else {
            EntryStatus::Unchanged
        };
        self.progress.finished(&applied.report);
        applied
    }

    async fn create(&self, planned: &Planned) -> Result<String, WriteError> {
        let e = &planned.entry;
        let request = CreateTool {
            name: e.name.clone(),
            tool_type: e.tool_type.clone(),
            project_name: PROJECT_NAME.to_string(),
            cpu_milli: CPU_MILLI,
            memory_mb: MEMORY_MB,
            enable_snapshot: e.recoverable,
            model_agent_name: e.model_agent_name.clone(),
            authorizer_configuration: Some(AuthorizerConfiguration {
                key_auth: KeyAuth {
                    api_key_name: e.api_key_name(),
                    api_key_location: "Header".into(),
                },
            }),
            network_configuration: Some(NetworkConfiguration {
                enable_public_network: true,
                enable_private_network: false,
            }),
            envs: (!e.envs.0.is_empty()).then(|| e.envs.0.clone()),
        };
        let out = self
            .limiter
            .write(self.writer, &planned.region, &request, self.deadline)
            .await?;
        tracing::info!(key = %e.key, tool = %out.tool_id, name = %e.name, "Tool created");
        Ok(out.tool_id)
    }

    /// Poll GetTool until the Tool is Ready (snapshots on for a recoverable one). `Ok(None)`:
    /// not by the deadline.
    async fn await_ready(
        &self,
        planned: &Planned,
        tool_id: &str,
    ) -> Result<Option<Tool>, snapwake::agentkit::AgentKitError> {
        let request = GetTool {
            tool_id: tool_id.to_string(),
        };
        loop {
            // Out of time before or during a poll is not a failure: the Tool exists and the
            // next run finishes waiting for it.
            if self.deadline.is_past() {
                return Ok(None);
            }
            let tool = match self
                .agentkit
                .call(&planned.region, &request, self.deadline)
                .await
            {
                Ok(tool) => tool,
                Err(_) if self.deadline.is_past() => return Ok(None),
                Err(e) => return Err(e),
            };
            let snapshots_ok = !planned.entry.recoverable || tool.enable_snapshot == Some(true);
            if tool.is_ready() && snapshots_ok {
                return Ok(Some(tool));
            }
            if tool.is_failed() {
                return Err(snapwake::agentkit::AgentKitError::Provider {
                    action: "GetTool",
                    code: tool.status.clone().unwrap_or_default(),
                    status: 200,
                    message: format!("Tool {tool_id} failed"),
                });
            }
            if !self.deadline.allows(self.poll_interval) {
                return Ok(None);
            }
            tokio::time::sleep(self.poll_interval).await;
        }
    }
}
