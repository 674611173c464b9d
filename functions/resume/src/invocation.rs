//! Everything that can invoke the resume function, typed as the Lambda runtime hands it over
//! (never re-read from JSON text):
//!
//! - an API Gateway HTTP API request (payload 2.0): the wake, sleep, keepalive and schedule
//!   routes;
//! - the schedules' tick: `{"action": "tick", "time": "<RFC 3339>"}`, the input the
//!   EventBridge Scheduler schedule gives with `<aws.scheduler.scheduled-time>`
//!   (docs/schedules.md);
//! - a batch of the fan-out queue's due occurrences, from its SQS event source mapping,
//!   answered with the messages to deliver again (`batchItemFailures`).
//!
//! One function serves both, rather than the tick in a function of its own: a tick wakes and
//! puts agents to sleep through exactly the code, permissions and settings of the HTTP routes
//! (docs/architecture.md, "One way in per binary"). Anything else is refused by the runtime's
//! deserialisation: a function error naming what it expected.

use lambda_http::aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use lambda_http::request::LambdaRequest;
use lambda_http::{Context, RequestExt};
use serde::{Deserialize, Serialize};
use snapwake::agentkit::AgentKit;
use snapwake::deadline::Deadline;
use snapwake::error::Error;
use snapwake::http::response;
use snapwake::invocation::begin_event;
use snapwake::store::{AgentStore, ScheduleStore};
use tracing::Instrument;

use crate::tick::{BatchResponse, QueueBatch, TickReport};
use crate::Resume;

/// What an invocation asks for. Untagged: the tick comes first, since it is recognised by its
/// exact fields, and an API Gateway request never has them; then an SQS batch (`Records`,
/// each from `aws:sqs`).
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "an API Gateway HTTP API request, an SQS batch, or a tick: \
    {\"action\": \"tick\", \"time\": \"<RFC 3339>\"}"
)]
pub enum Invocation {
    Tick(TickEvent),
    Queue(QueueBatch),
    Http(Box<HttpEvent>),
}

/// The schedules' tick at `time`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TickEvent {
    #[allow(dead_code)] // recognises the event: `"action": "tick"`
    action: TickAction,
    /// The instant the Scheduler meant (epoch ms), never this machine's clock.
    #[serde(deserialize_with = "rfc3339_ms")]
    pub time: u64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum TickAction {
    Tick,
}

/// An API Gateway HTTP API request: one that names its route or its path (every field of the
/// payload is optional to its type, so an event that names neither is not taken for one).
#[derive(Debug, Deserialize)]
#[serde(try_from = "ApiGatewayV2httpRequest")]
pub struct HttpEvent(ApiGatewayV2httpRequest);

impl TryFrom<ApiGatewayV2httpRequest> for HttpEvent {
    type Error = &'static str;

    fn try_from(request: ApiGatewayV2httpRequest) -> Result<Self, Self::Error> {
        match (&request.route_key, &request.raw_path) {
            (None, None) => Err("not an API Gateway request: no routeKey, no rawPath"),
            _ => Ok(HttpEvent(request)),
        }
    }
}

/// What the function answers: API Gateway's response, a tick's report, or a batch's
/// messages to deliver again.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Answer {
    Http(Box<ApiGatewayV2httpResponse>),
    Tick(TickReport),
    Queue(BatchResponse),
}

fn rfc3339_ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let time = String::deserialize(d)?;
    snapwake::timestamp::epoch_ms(&time)
        .ok_or_else(|| serde::de::Error::custom("the tick's time is not an RFC 3339 instant"))
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// Serve one invocation: an HTTP request's answer, or a tick's report. In the invocation's
    /// span, so every line logged for it carries Lambda's request id.
    pub async fn invoke(&self, event: Invocation, context: Context) -> Result<Answer, Error> {
        let span = begin_event(&context);
        Box::pin(self.serve_invocation(event, context))
            .instrument(span)
            .await
    }

    async fn serve_invocation(&self, event: Invocation, context: Context) -> Result<Answer, Error> {
        match event {
            Invocation::Http(http) => {
                let HttpEvent(request) = *http;
                let request = lambda_http::Request::from(LambdaRequest::ApiGatewayV2(request))
                    .with_lambda_context(context);
                let answered = response::api_gateway_v2(self.handle(request).await);
                Ok(Answer::Http(Box::new(answered)))
            }
            Invocation::Tick(tick) => {
                let deadline = Deadline::for_invocation(context.deadline);
                Ok(Answer::Tick(self.tick(tick.time, deadline).await?))
            }
            Invocation::Queue(batch) => {
                let deadline = Deadline::for_invocation(context.deadline);
                Ok(Answer::Queue(self.due_batch(batch, deadline).await))
            }
        }
    }
}
