//! Where one invocation begins, and what it is.
//!
//! **What it is** ([`Invocation`]): the function that runs it, whose work it is and what set it
//! off, set once at each entry point ([`Invocation::run`]) and read where it matters: the AWS
//! call recorder names the function (`crate::aws_calls`), the AgentKit budget picks its lane by
//! the priority (`crate::budget`), and a state change is announced with the trigger
//! (`crate::events`).
//!
//! **Its span**: every function's entry point calls [`begin_http`] (through
//! [`crate::http::edge::serve`]) or [`begin_event`] (the delete function's schedules and
//! events, the deploy function's) and runs the invocation's future in the span it answers.
//!
//! The span carries the ids to find the invocation's lines by: `aws_request_id` (Lambda's,
//! from the invocation's context) and, for an API Gateway request, `apigw_request_id`
//! (`requestContext.requestId`, the id a client sees in a problem's `request_id`). The JSON log
//! lines of a deployed function put them at the top level of every line logged inside it
//! (`bootstrap::logs`), so one request's lines are `filter aws_request_id = "…"` in CloudWatch
//! Logs Insights, also those logged deep in the store, the AgentKit client, wake and sleep.

use std::future::Future;

use lambda_http::request::RequestContext;
use lambda_http::{Context, Request, RequestExt};
use tracing::field::Empty;
use tracing::Span;

use crate::domain::Trigger;

/// Whose work an invocation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// A person waiting on an HTTP answer: wake, sleep, list, create, delete.
    People,
    /// Work nobody waits on: the tick, the sweep, the refresh, deploys.
    Background,
}

/// What one invocation is: set once where it begins, read wherever it matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The function running it (its logical id in the template): whose AWS calls they are.
    pub function: &'static str,
    /// Whose work it is: the budget's lane for its AgentKit calls.
    pub priority: Priority,
    /// What set it off: the trigger its state changes are announced with.
    pub trigger: Trigger,
}

tokio::task_local! {
    static CURRENT: Invocation;
}

impl Invocation {
    /// A request through the HTTP API, a person's (or a program's) waiting on its answer.
    pub fn http(function: &'static str) -> Self {
        Invocation {
            function,
            priority: Priority::People,
            trigger: Trigger::Http,
        }
    }

    /// Work nobody waits on, set off by `trigger`.
    pub fn background(function: &'static str, trigger: Trigger) -> Self {
        Invocation {
            function,
            priority: Priority::Background,
            trigger,
        }
    }

    /// Run `work` as this invocation. Boxed: an entry point's future is large (a sweep's,
    /// unoptimised, overflowed a test thread's stack once one more layer held it by value).
    pub async fn run<F: Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, Box::pin(work)).await
    }

    /// The invocation the current task runs in, if any (a test's own setup, `serve`'s stream
    /// reader: none).
    pub fn current() -> Option<Invocation> {
        CURRENT.try_with(|i| *i).ok()
    }
}

/// The function the current task runs as, if any.
pub fn function() -> Option<&'static str> {
    Invocation::current().map(|i| i.function)
}

/// Whose work the current task is: a person's outside any invocation.
pub fn priority() -> Priority {
    Invocation::current().map_or(Priority::People, |i| i.priority)
}

/// What set the current task off: HTTP outside any invocation.
pub fn trigger() -> Trigger {
    Invocation::current().map_or(Trigger::Http, |i| i.trigger)
}

/// The invocation span's name.
pub const SPAN_NAME: &str = "invocation";
/// The invocation span's target (this module's path, which the span gets by default).
pub const TARGET: &str = "snapwake::invocation";
/// Lambda's request id: the invocation's, in every function.
pub const AWS_REQUEST_ID: &str = "aws_request_id";
/// API Gateway's request id (`requestContext.requestId`): only in an HTTP request.
pub const APIGW_REQUEST_ID: &str = "apigw_request_id";

/// The span `lambda_runtime` opens around each invocation (its `TracingLayer`), and the field
/// holding Lambda's request id there. The runtime logs a few lines of its own inside it, before
/// the handler runs (an event it cannot read, for one): they carry `aws_request_id` too.
pub const RUNTIME_SPAN_NAME: &str = "Lambda runtime invoke";
/// The request id field of [`RUNTIME_SPAN_NAME`].
pub const RUNTIME_REQUEST_ID: &str = "requestId";

/// An API Gateway request begins: the span of its invocation, with Lambda's request id (when
/// it came through Lambda: the local server has none) and API Gateway's.
pub fn begin_http(request: &Request) -> Span {
    let aws = request
        .lambda_context_ref()
        .map(|context| context.request_id.as_str());
    let apigw = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.request_id.as_deref(),
        _ => None,
    };
    begin(aws, apigw)
}

/// An event invocation begins (a schedule, an EventBridge event, a direct invoke): the span
/// of its invocation, with Lambda's request id.
pub fn begin_event(context: &Context) -> Span {
    begin(Some(context.request_id.as_str()), None)
}

fn begin(aws_request_id: Option<&str>, apigw_request_id: Option<&str>) -> Span {
    // Both fields are declared, and only the known ones recorded: a field left `Empty` is not
    // written at all, rather than written empty.
    let span = tracing::info_span!(
        "invocation",
        aws_request_id = Empty,
        apigw_request_id = Empty
    );
    for (field, id) in [
        (AWS_REQUEST_ID, aws_request_id),
        (APIGW_REQUEST_ID, apigw_request_id),
    ] {
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            span.record(field, id);
        }
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_is_the_one_the_log_setup_looks_for() {
        // A span is only built when a subscriber wants it: the registry wants every one.
        tracing::subscriber::with_default(tracing_subscriber::registry(), || {
            let span = begin(Some("aws-1"), Some("apigw-1"));
            let meta = span.metadata().expect("an enabled span");
            assert_eq!(meta.name(), SPAN_NAME);
            assert_eq!(meta.target(), TARGET);
            for field in [AWS_REQUEST_ID, APIGW_REQUEST_ID] {
                assert!(meta.fields().field(field).is_some(), "{field}");
            }
        });
    }
}
