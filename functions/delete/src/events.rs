//! Serving each invocation [`crate::invocation::classify`] tells apart: an HTTP request's
//! answer, the sweep's report (with the pending offboardings it finished), the refresh's, the
//! offboarding's — or its refusal, for an event from a source not configured.

use std::time::Duration;

use lambda_http::{Context, RequestExt};
use serde_json::Value;
use snapwake::agentkit::AgentKit;
use snapwake::domain::{ToolRegistry, Trigger};
use snapwake::error::Error;
use snapwake::http::edge;
use snapwake::invocation::Deadline;
use snapwake::invocation::{self, begin_event, Invocation as Running, Metric};
use snapwake::store::{AgentStore, ScheduleStore, Within};
use tracing::Instrument;

use crate::invocation::{classify, Invocation};
use crate::offboard::{sources, FinishReport, Offboard, OffboardProgress, OffboardReport};
use crate::sweep::refresh::{Refresh, RefreshReport};
use crate::sweep::{Sweep, SweepProgress, SweepReport};
use crate::Delete;

impl<S: AgentStore + ScheduleStore, K: AgentKit> Delete<S, K> {
    /// Serve one invocation of the function: an HTTP request's answer, the sweep's report, the
    /// refresh's, the offboarding's; an error for an event this function does not handle, and
    /// for one it could not record (so that it is retried, then dead-lettered). All of it in
    /// the invocation's span, so every line logged for it carries Lambda's request id (an
    /// HTTP request's lines API Gateway's as well: [`Delete::handle`] opens its own inside).
    pub async fn invoke(&self, event: Value, context: Context) -> Result<Value, Error> {
        // Each entry point below runs as its own invocation (a request, the sweep, the refresh,
        // an offboarding); this one only covers reading the event before any begins.
        Running::http(crate::FUNCTION)
            .run(async {
                let span = begin_event(&context);
                // Boxed: the future of every entry point nested in one more layer was deeper than
                // rustc's layout query allows (`queries overflow the depth limit` in `main`).
                Box::pin(self.serve_invocation(event, context))
                    .instrument(span)
                    .await
            })
            .await
    }

    async fn serve_invocation(&self, event: Value, context: Context) -> Result<Value, Error> {
        let deadline_ms = context.deadline;
        match classify(&event)? {
            Invocation::Http(request) => {
                let request = request.with_lambda_context(context);
                Ok(
                    serde_json::to_value(edge::api_gateway_v2(self.handle(request).await))
                        .unwrap_or(serde_json::Value::Null),
                )
            }
            Invocation::Sweep { every } => {
                let deadline = Deadline::for_invocation(deadline_ms);
                if let Some(every) = every {
                    if !self.sweep_due(every, deadline).await? {
                        return Ok(serde_json::json!({"due": false}));
                    }
                }
                let report = self.sweep(deadline, false, &crate::Quiet).await?;
                let counts = &report.counts;
                invocation::emit(
                    Metric::of("sweep")
                        .count("AgentsIndexed", counts.indexed)
                        .count("SnapshotsPruned", counts.pruned)
                        .count("IdleAgentsDeleted", counts.idle_deleted)
                        .count("SweepErrors", counts.errors)
                        .millis("SweepDuration", report.duration_ms),
                );
                // What offboardings left (agents held when their event came) is finished
                // with the time the sweep left.
                let offboarding = self.finish_offboardings(deadline).await?;
                let mut value = to_value(&report)?;
                value["offboarding"] = to_value(&offboarding)?;
                Ok(value)
            }
            Invocation::Refresh => {
                let report = self.refresh(Deadline::for_invocation(deadline_ms)).await?;
                to_value(&report)
            }
            Invocation::Offboard { owner, source } => {
                if let Err(refused) =
                    sources::check(source.as_deref(), &self.settings.offboarding.sources)
                {
                    return to_value(&refused);
                }
                let report = self
                    .offboard(
                        &owner,
                        Deadline::for_invocation(deadline_ms),
                        false,
                        &crate::Quiet,
                    )
                    .await?;
                to_value(&report)
            }
        }
    }

    /// The retention sweep over this function's store and AgentKit.
    pub async fn sweep(
        &self,
        deadline: Deadline,
        dry_run: bool,
        progress: &dyn SweepProgress,
    ) -> Result<SweepReport, Error> {
        // What it deletes is announced as the sweep's doing.
        Running::background(crate::FUNCTION, Trigger::Sweep)
            .run(async {
                let registry = self.registry(deadline).await?;
                let sweep = Sweep {
                    store: &self.store,
                    agentkit: &self.agentkit,
                    registry: &registry,
                    lock: &self.settings.lock,
                    settings: &self.settings.sweep,
                    progress,
                };
                sweep.run(deadline, dry_run).await
            })
            .await
    }

    /// Whether a scheduled sweep beginning a pass every `every` has work now (the table
    /// alone says: a pass in progress, or when the last began).
    pub async fn sweep_due(&self, every: Duration, deadline: Deadline) -> Result<bool, Error> {
        Running::background(crate::FUNCTION, Trigger::Sweep)
            .run(async { crate::sweep::is_due(&Within::new(&self.store, deadline), every).await })
            .await
    }

    /// The index refresh: what is new on each snapshot Tool since the last one.
    pub async fn refresh(&self, deadline: Deadline) -> Result<RefreshReport, Error> {
        // What the refresh learns of AgentKit's clock it announces as AgentKit's; the rest it
        // writes as the API would.
        Running::background(crate::FUNCTION, Trigger::Http)
            .run(async {
                let registry = self.registry(deadline).await?;
                let refresh = Refresh {
                    store: &self.store,
                    agentkit: &self.agentkit,
                    registry: &registry,
                    slices: self.settings.sweep.slices,
                };
                refresh.run(deadline).await
            })
            .await
    }

    /// Delete every agent of `owner`.
    pub async fn offboard(
        &self,
        owner: &str,
        deadline: Deadline,
        dry_run: bool,
        progress: &dyn OffboardProgress,
    ) -> Result<OffboardReport, Error> {
        Running::background(crate::FUNCTION, Trigger::Offboarding)
            .run(async {
                let registry = self.registry(deadline).await?;
                let offboard = self.offboarding(&registry, progress);
                offboard.run(owner, deadline, dry_run).await
            })
            .await
    }

    /// The deployed Tools, read within `deadline`.
    async fn registry(&self, deadline: Deadline) -> Result<std::sync::Arc<ToolRegistry>, Error> {
        self.registry.get(&Within::new(&self.store, deadline)).await
    }

    /// An offboarding over this function's store and AgentKit.
    fn offboarding<'a>(
        &'a self,
        registry: &'a ToolRegistry,
        progress: &'a dyn OffboardProgress,
    ) -> Offboard<'a, S, K> {
        Offboard {
            store: &self.store,
            agentkit: &self.agentkit,
            registry,
            lock: &self.settings.lock,
            progress,
        }
    }

    /// Finish what earlier offboardings left.
    pub async fn finish_offboardings(&self, deadline: Deadline) -> Result<FinishReport, Error> {
        Running::background(crate::FUNCTION, Trigger::Offboarding)
            .run(async {
                let registry = self.registry(deadline).await?;
                let offboard = self.offboarding(&registry, &crate::Quiet);
                offboard.finish_pending(deadline).await
            })
            .await
    }
}

fn to_value<T: serde::Serialize>(report: &T) -> Result<Value, Error> {
    serde_json::to_value(report).map_err(|e| Error::Internal(e.to_string()))
}
