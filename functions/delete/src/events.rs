//! Everything that can invoke the delete function, told apart by its shape (docs/operations.md,
//! "Events"):
//!
//! - an API Gateway HTTP API request (payload 2.0): the DELETE routes;
//! - the retention sweep's schedule: the rule's constant input `{"action": "sweep"}`, or an
//!   EventBridge `Scheduled Event` envelope (with `{"action": "sweep"}` as its detail, or an
//!   empty one: this function has no other schedule);
//! - an EventBridge event `detail-type: "snapwake.owner.offboarded"`, `detail: {"owner"}`.
//!
//! Anything else is a function error that names what arrived (its `detail-type` and `source`,
//! or its top-level keys — never its values).

use lambda_http::{Context, RequestExt};
use serde_json::Value;
use snapwake::agentkit::AgentKit;
use snapwake::deadline::Deadline;
use snapwake::error::Error;
use snapwake::http::response;
use snapwake::metrics::{self, Record};
use snapwake::store::{AgentStore, Within};

use crate::offboard::{Offboard, OffboardProgress, OffboardReport};
use crate::sweep::{Sweep, SweepProgress, SweepReport};
use crate::Delete;

/// The `detail-type` of an offboarding event.
pub const OFFBOARDED: &str = "snapwake.owner.offboarded";
/// The `detail-type` EventBridge gives scheduled events.
pub const SCHEDULED: &str = "Scheduled Event";

/// What an invocation asks for.
#[derive(Debug)]
pub enum Invocation {
    Http(Box<lambda_http::Request>),
    Sweep,
    Offboard { owner: String },
}

/// Tell an invocation's payload apart.
pub fn classify(event: &Value) -> Result<Invocation, Error> {
    let Some(object) = event.as_object() else {
        return Err(unknown(event));
    };
    if object.contains_key("requestContext")
        && (object.contains_key("routeKey") || object.contains_key("rawPath"))
    {
        let request = lambda_http::request::from_str(&event.to_string())
            .map_err(|e| Error::bad_request(format!("unreadable API Gateway request: {e}")))?;
        return Ok(Invocation::Http(Box::new(request)));
    }
    if object.get("action").and_then(Value::as_str) == Some("sweep") {
        return Ok(Invocation::Sweep);
    }
    match object.get("detail-type").and_then(Value::as_str) {
        Some(SCHEDULED) => {
            let detail = object.get("detail");
            let empty = detail.is_none_or(|d| d.as_object().is_some_and(|o| o.is_empty()));
            let sweep =
                detail.and_then(|d| d.get("action")).and_then(Value::as_str) == Some("sweep");
            if empty || sweep {
                Ok(Invocation::Sweep)
            } else {
                Err(unknown(event))
            }
        }
        Some(OFFBOARDED) => {
            let owner = object
                .get("detail")
                .and_then(|d| d.get("owner"))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .ok_or_else(|| {
                    Error::bad_request(format!(
                        "a {OFFBOARDED} event needs detail.owner, a non-empty string"
                    ))
                })?;
            Ok(Invocation::Offboard {
                owner: owner.to_string(),
            })
        }
        _ => Err(unknown(event)),
    }
}

/// The error for a payload this function does not handle: what it was, never its values.
fn unknown(event: &Value) -> Error {
    let what = match event.as_object() {
        Some(o) => {
            let field = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("none");
            let keys: Vec<&str> = o.keys().map(String::as_str).take(12).collect();
            format!(
                "an event with detail-type {:?}, source {:?} and keys {keys:?}",
                field("detail-type"),
                field("source")
            )
        }
        None => format!("a JSON {}", kind_of(event)),
    };
    Error::bad_request(format!(
        "the delete function handles API Gateway requests, the sweep schedule and \
         {OFFBOARDED} events, not {what}"
    ))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl<S: AgentStore, K: AgentKit> Delete<S, K> {
    /// Serve one invocation of the function: an HTTP request's answer, the sweep's report, the
    /// offboarding's report; an error for an event this function does not handle, and for an
    /// offboarding that left agents behind (so the event is delivered again).
    pub async fn invoke(&self, event: Value, context: Context) -> Result<Value, Error> {
        let deadline_ms = context.deadline;
        match classify(&event)? {
            Invocation::Http(request) => {
                let request = request.with_lambda_context(context);
                Ok(response::api_gateway_v2(self.handle(request).await))
            }
            Invocation::Sweep => {
                let report = self
                    .sweep(Deadline::for_invocation(deadline_ms), false, &crate::Quiet)
                    .await?;
                let counts = &report.counts;
                metrics::emit(
                    Record::of("sweep")
                        .count("AgentsIndexed", counts.indexed)
                        .count("SnapshotsPruned", counts.pruned)
                        .count("SweepErrors", counts.errors)
                        .millis("SweepDuration", report.duration_ms),
                );
                to_value(&report)
            }
            Invocation::Offboard { owner } => {
                let report = self
                    .offboard(
                        &owner,
                        Deadline::for_invocation(deadline_ms),
                        false,
                        &crate::Quiet,
                    )
                    .await?;
                if report.failed > 0 {
                    return Err(Error::Internal(format!(
                        "offboarding left {} agent(s) of the owner; the event will be delivered again",
                        report.failed
                    )));
                }
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
        let registry = self
            .registry
            .get(&Within::new(&self.store, deadline))
            .await?;
        Sweep {
            store: &self.store,
            agentkit: &self.agentkit,
            registry: &registry,
            delete: &self.settings,
            settings: &self.settings.sweep,
            progress,
        }
        .run(deadline, dry_run)
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
        let registry = self
            .registry
            .get(&Within::new(&self.store, deadline))
            .await?;
        Offboard {
            store: &self.store,
            agentkit: &self.agentkit,
            registry: &registry,
            delete: &self.settings,
            progress,
        }
        .run(owner, deadline, dry_run)
        .await
    }
}

fn to_value<T: serde::Serialize>(report: &T) -> Result<Value, Error> {
    serde_json::to_value(report).map_err(|e| Error::Internal(e.to_string()))
}
