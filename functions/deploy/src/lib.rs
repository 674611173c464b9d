//! The deploy function: an EventBridge `Scheduled Event`, or a direct invoke with
//! `{"dry_run": bool, "migrate_legacy": bool}`, reconciles the catalogue of AgentKit Tools
//! ([`reconcile`]) and answers the report (also logged as one line).
//!
//! A scheduled event runs a plain apply (no dry run, no migration: a migration is a decision
//! an operator makes by invoking). Any other event must be the invoke body; unknown fields are
//! refused, so a typo (`"dryrun"`) never turns a plan into an apply. A second run while one
//! holds the deploy lock answers an `already_running` report, not an error.

pub mod reconcile;

use crate::reconcile::{Catalogue, DeployOptions, DeploySettings, Deployer, NoProgress, Report};
use lambda_runtime::Context;
use serde_json::Value;
use snapwake::agentkit::AgentKit;
use snapwake::domain::Trigger;
use snapwake::error::{Error, Result};
use snapwake::invocation::Deadline;
use snapwake::invocation::{self, Invocation, Metric};
use snapwake::store::AgentStore;
use tracing::Instrument;

/// The deploy function's context: ports and desired state built once per container.
/// The function's logical id in `infra/template.yaml`: its AWS calls are checked against that
/// function's policy (`snapwake::aws_calls`).
pub const FUNCTION: &str = "DeployFunction";

pub struct Deploy<S, K> {
    pub store: S,
    /// Reads, with the client's retries.
    pub agentkit: K,
    /// Writes, through a client that does not retry by itself (the limiter does).
    pub writer: K,
    pub catalogue: Catalogue,
    pub settings: DeploySettings,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Invoke {
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    migrate_legacy: bool,
}

/// What an event asks for.
fn options(event: &Value) -> Result<DeployOptions> {
    let scheduled = event.get("source").and_then(Value::as_str) == Some("aws.events")
        || event.get("detail-type").and_then(Value::as_str) == Some("Scheduled Event");
    if scheduled {
        return Ok(DeployOptions::default());
    }
    if event.is_null() {
        return Ok(DeployOptions::default());
    }
    let invoke: Invoke = serde_json::from_value(event.clone())
        .map_err(|e| Error::bad_request(format!("deploy event: {e}")))?;
    Ok(DeployOptions {
        dry_run: invoke.dry_run,
        migrate_legacy: invoke.migrate_legacy,
    })
}

impl<S: AgentStore, K: AgentKit> Deploy<S, K> {
    /// Serve one invocation: [`Deploy::handle`] until the context's deadline, in the
    /// invocation's span, so every line logged for it carries Lambda's request id.
    pub async fn invoke(&self, event: Value, context: &Context) -> Result<Value> {
        let span = invocation::begin_event(context);
        // Boxed: one more layer around the reconcile's future was deeper than rustc's layout
        // query allows (`queries overflow the depth limit` in `main`).
        Box::pin(self.handle(event, context.deadline))
            .instrument(span)
            .await
    }

    /// Run for `event` until `deadline_ms` (epoch ms, the Lambda context's deadline).
    pub async fn handle(&self, event: Value, deadline_ms: u64) -> Result<Value> {
        let options = options(&event)?;
        let report = self
            .run(options, Deadline::for_invocation(deadline_ms))
            .await?;
        invocation::emit(
            Metric::of("deploy")
                .count("ToolWrites", report.writes)
                .count("ToolWriteThrottles", report.throttles)
                .millis("DeployDuration", report.duration_ms),
        );
        Ok(report.to_json())
    }

    /// Run with `options` until `deadline`, logging the report.
    pub async fn run(&self, options: DeployOptions, deadline: Deadline) -> Result<Report> {
        let deployer = Deployer {
            store: &self.store,
            agentkit: &self.agentkit,
            writer: &self.writer,
            catalogue: &self.catalogue,
            settings: &self.settings,
            progress: &NoProgress,
        };
        // Nobody waits on a deploy: its Tool calls take the budget's background lane.
        let report = Invocation::background(FUNCTION, Trigger::Http)
            .run(deployer.run(options, deadline))
            .await
            .inspect_err(|e| {
                tracing::error!(error = %e, "deploy failed");
            })?;
        tracing::info!(
            report = %serde_json::to_string(&report).unwrap_or_default(),
            "deploy report"
        );
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_map_to_options() {
        let scheduled = json!({"source": "aws.events", "detail-type": "Scheduled Event",
            "detail": {}, "id": "x", "time": "2026-01-01T00:00:00Z"});
        assert_eq!(options(&scheduled).unwrap(), DeployOptions::default());
        let invoke = json!({"dry_run": true, "migrate_legacy": true});
        let o = options(&invoke).unwrap();
        assert!(o.dry_run && o.migrate_legacy);
        assert_eq!(options(&json!({})).unwrap(), DeployOptions::default());
        assert!(options(&json!({"dryrun": true})).is_err());
        assert!(options(&json!({"dry_run": "yes"})).is_err());
    }
}
