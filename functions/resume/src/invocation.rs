//! Everything that can invoke the resume function, told apart by its shape:
//!
//! - an API Gateway HTTP API request (payload 2.0): the wake, sleep, keepalive and schedule
//!   routes;
//! - the schedules' tick: `{"action": "tick", "time": "<RFC 3339>"}`, the input the
//!   EventBridge Scheduler schedule gives with `<aws.scheduler.scheduled-time>` (docs/schedules.md).
//!
//! Anything else is a function error naming its top-level keys (never their values).

use lambda_http::{Context, RequestExt};
use serde_json::Value;
use snapwake::agentkit::AgentKit;
use snapwake::deadline::Deadline;
use snapwake::error::Error;
use snapwake::http::response;
use snapwake::invocation::begin_event;
use snapwake::store::{AgentStore, ScheduleStore};
use tracing::Instrument;

use crate::Resume;

/// What an invocation asks for.
#[derive(Debug)]
pub enum Invocation {
    Http(Box<lambda_http::Request>),
    /// A tick at this instant (epoch ms).
    Tick {
        time_ms: u64,
    },
}

/// Tell an invocation's payload apart.
pub fn classify(event: &Value) -> Result<Invocation, Error> {
    let Some(object) = event.as_object() else {
        return Err(Error::bad_request("the event is not a JSON object"));
    };
    if object.contains_key("requestContext")
        && (object.contains_key("routeKey") || object.contains_key("rawPath"))
    {
        let request = lambda_http::request::from_str(&event.to_string())
            .map_err(|e| Error::bad_request(format!("unreadable API Gateway request: {e}")))?;
        return Ok(Invocation::Http(Box::new(request)));
    }
    if object.get("action").and_then(Value::as_str) == Some("tick") {
        let time = object.get("time").and_then(Value::as_str).ok_or_else(|| {
            Error::bad_request(
                "a tick names its time: {\"action\": \"tick\", \"time\": \"<RFC 3339>\"}",
            )
        })?;
        let time_ms = snapwake::timestamp::epoch_ms(time)
            .ok_or_else(|| Error::bad_request("the tick's time is not an RFC 3339 instant"))?;
        return Ok(Invocation::Tick { time_ms });
    }
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    Err(Error::bad_request(format!(
        "the resume function does not handle an event with keys {keys:?}"
    )))
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// Serve one invocation: an HTTP request's answer, or a tick's report. In the invocation's
    /// span, so every line logged for it carries Lambda's request id.
    pub async fn invoke(&self, event: Value, context: Context) -> Result<Value, Error> {
        let span = begin_event(&context);
        Box::pin(self.serve_invocation(event, context))
            .instrument(span)
            .await
    }

    async fn serve_invocation(&self, event: Value, context: Context) -> Result<Value, Error> {
        match classify(&event)? {
            Invocation::Http(request) => {
                let request = request.with_lambda_context(context);
                Ok(response::api_gateway_v2(self.handle(request).await))
            }
            Invocation::Tick { time_ms } => {
                let report = self
                    .tick(time_ms, Deadline::for_invocation(context.deadline))
                    .await?;
                serde_json::to_value(&report).map_err(|e| Error::Internal(e.to_string()))
            }
        }
    }
}
