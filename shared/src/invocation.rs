//! Where one invocation begins, and what it is.
//!
//! [`Invocation`] (its function, priority and trigger) is set once at each entry point and read
//! where it matters: the AWS call recorder, the AgentKit budget's lanes, announced events. Its
//! span ([`begin_http`], [`begin_event`]) carries `aws_request_id` and, for API Gateway,
//! `apigw_request_id` (a problem's `request_id`): every JSON log line inside it carries them at
//! its top level (`bootstrap::logs`), so CloudWatch finds one request's lines by either.

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
    pub fn http(function: &'static str) -> Self {
        Invocation {
            function,
            priority: Priority::People,
            trigger: Trigger::Http,
        }
    }

    pub fn background(function: &'static str, trigger: Trigger) -> Self {
        Invocation {
            function,
            priority: Priority::Background,
            trigger,
        }
    }

    /// Run `work` as this invocation. Boxed: an entry point's future is large enough to
    /// overflow a test thread's stack.
    pub async fn run<F: Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, Box::pin(work)).await
    }

    /// The invocation the current task runs in, if any.
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

pub const SPAN_NAME: &str = "invocation";
/// The invocation span's target (this module's path, which the span gets by default).
pub const TARGET: &str = "snapwake::invocation";
pub const AWS_REQUEST_ID: &str = "aws_request_id";
/// API Gateway's request id (`requestContext.requestId`): only in an HTTP request.
pub const APIGW_REQUEST_ID: &str = "apigw_request_id";

/// The span `lambda_runtime` opens around each invocation: its own lines inside it (an event it
/// cannot read) carry `aws_request_id` too.
pub const RUNTIME_SPAN_NAME: &str = "Lambda runtime invoke";
/// The request id field of [`RUNTIME_SPAN_NAME`].
pub const RUNTIME_REQUEST_ID: &str = "requestId";

/// An API Gateway request's span, with Lambda's request id (none locally) and API Gateway's.
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

/// An event invocation's span (a schedule, an event, a direct invoke), with Lambda's id.
pub fn begin_event(context: &Context) -> Span {
    begin(Some(context.request_id.as_str()), None)
}

fn begin(aws_request_id: Option<&str>, apigw_request_id: Option<&str>) -> Span {
    // Only known ids are recorded: a field left `Empty` is not written at all.
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
