//! The HTTP edge: serving a request in the invocation's span, and every answer: JSON with its
//! headers, or problem+json with the request id, logged once by status (a 5xx is ours or a
//! dependency's to fix: `warn`; a 4xx the caller's: `info`). Details never go into the body.

use std::future::Future;

use futures::FutureExt;
use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use tracing::Instrument;

use crate::agentkit::AgentKitError;
use crate::domain::failure::OUTCOME_KEPT;
use crate::domain::{AgentKey, AgentRecord};
use crate::error::Error;
use crate::invocation;
use crate::store::StoreError;

use super::request::request_id;

/// Serve `request` in the invocation's span, so no function can forget it. `work` is mapped, not
/// awaited in an `async` block, which would hold its future twice (debug stacks overflow).
pub fn serve<'w>(
    request: &Request,
    work: impl Future<Output = crate::Result<Response<Body>>> + 'w,
) -> impl Future<Output = Response<Body>> + 'w {
    let request_id = request_id(request);
    let span = invocation::begin_http(request);
    work.map(move |result| answer(result, request_id.as_deref()))
        .instrument(span)
}

pub fn answer(result: crate::Result<Response<Body>>, request_id: Option<&str>) -> Response<Body> {
    match result {
        Ok(response) => response,
        Err(err) => problem(&err, request_id),
    }
}

/// `err` as problem+json, logged by its status.
pub fn problem(err: &Error, request_id: Option<&str>) -> Response<Body> {
    let mut p = Problem::from(err);
    let id = request_id.unwrap_or("");
    if p.status >= 500 {
        tracing::warn!(request_id = id, status = p.status, error = %err, "request failed");
    } else {
        tracing::info!(request_id = id, status = p.status, error = %err, "request refused");
    }
    if let Some(id) = request_id {
        p = p.with_request_id(id);
    }
    p.into_response()
}

/// `status` with `value` as a JSON body.
pub fn json<T: Serialize>(status: u16, value: &T) -> http::Response<Body> {
    let body = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::Text(body))
        .unwrap_or_else(|_| http::Response::new(Body::Empty))
}

pub fn no_content() -> http::Response<Body> {
    http::Response::builder()
        .status(204)
        .body(Body::Empty)
        .unwrap_or_else(|_| http::Response::new(Body::Empty))
}

/// `response` with `record`'s version as `ETag` (none for a record never written).
pub fn with_etag(mut response: http::Response<Body>, record: &AgentRecord) -> http::Response<Body> {
    if record.version > 0 {
        if let Ok(value) = record.etag().parse() {
            response.headers_mut().insert(http::header::ETAG, value);
        }
    }
    response
}

/// `response` with the agent's address as `Location` (a 201's creation, a 202's progress),
/// under `prefix` ([`super::request::prefix`]) so it works from where the client stands.
pub fn with_location(
    mut response: http::Response<Body>,
    prefix: &str,
    key: &AgentKey,
) -> http::Response<Body> {
    if let Ok(value) = format!("{prefix}/v1/agents/{}/{}", key.kind, key.agent_id).parse() {
        response.headers_mut().insert(http::header::LOCATION, value);
    }
    response
}

/// `response` as a Lambda answers API Gateway (HTTP API, payload 2.0); `snapwake invoke` prints it.
pub fn api_gateway_v2(response: http::Response<Body>) -> ApiGatewayV2httpResponse {
    let (parts, body) = response.into_parts();
    let mut out = ApiGatewayV2httpResponse::default();
    out.status_code = i64::from(parts.status.as_u16());
    out.headers = parts.headers;
    out.body = match body {
        Body::Empty => None,
        other => Some(other),
    };
    out.is_base64_encoded = matches!(out.body, Some(Body::Binary(_)));
    out
}

// ---- RFC 9457 problem+json, the one place an [`Error`] becomes an HTTP answer:
// `{"type", "title", "status", "detail", "code", "retryable", "request_id"}`, plus `Retry-After`
// or `Allow`. `detail` is chosen here: never provider messages, secrets, endpoints or traces.

pub const CONTENT_TYPE: &str = "application/problem+json";

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    #[serde(rename = "type")]
    pub type_uri: String,
    pub title: &'static str,
    pub status: u16,
    pub detail: String,
    pub code: &'static str,
    pub retryable: bool,
    pub request_id: Option<String>,
    /// The request body's field a 422 is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
    #[serde(skip)]
    pub retry_after_s: Option<u64>,
    /// Methods for the `Allow` header of a 405 (not part of the body).
    #[serde(skip)]
    pub allow: Option<String>,
}

impl Problem {
    fn new(
        status: u16,
        code: &'static str,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Self {
        let kebab = code.to_ascii_lowercase().replace('_', "-");
        Problem {
            type_uri: format!("urn:snapwake:problem:{kebab}"),
            title,
            status,
            detail: detail.into(),
            code,
            retryable: false,
            request_id: None,
            field: None,
            retry_after_s: None,
            allow: None,
        }
    }

    fn retryable(mut self, retry_after_s: Option<u64>) -> Self {
        self.retryable = true;
        self.retry_after_s = retry_after_s;
        self
    }

    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    pub fn into_response(self) -> http::Response<Body> {
        let mut builder = http::Response::builder()
            .status(self.status)
            .header(http::header::CONTENT_TYPE, CONTENT_TYPE);
        if let Some(s) = self.retry_after_s {
            builder = builder.header(http::header::RETRY_AFTER, s.to_string());
        }
        if let Some(allow) = &self.allow {
            builder = builder.header(http::header::ALLOW, allow.as_str());
        }
        // Serialising a struct of strings and numbers cannot fail.
        let body = serde_json::to_string(&self).unwrap_or_default();
        builder
            .body(Body::Text(body))
            .unwrap_or_else(|_| http::Response::new(Body::Empty))
    }
}

impl From<&Error> for Problem {
    /// Status and code are the error's own; this adds title, detail and how to retry.
    fn from(err: &Error) -> Self {
        let problem = |title: &'static str, detail: String| {
            Problem::new(err.status(), err.code(), title, detail)
        };
        let kept = Some(OUTCOME_KEPT.as_secs());
        match err {
            Error::Unauthenticated => problem(
                "Unauthenticated",
                "sign in: the request carries no verified identity".into(),
            ),
            Error::AgentNotFound => problem(
                "Agent not found",
                "no such agent, or it is not yours".into(),
            ),
            Error::ScheduleNotFound => {
                problem("Schedule not found", "the agent has no schedule".into())
            }
            Error::InvalidField { field, .. } => Problem {
                field: Some(field),
                ..problem("Invalid request", err.to_string())
            },
            Error::SnapshotNotFound => problem(
                "Snapshot not found",
                "the agent has no such snapshot".into(),
            ),
            Error::AgentGone => problem("Agent deleted", "the agent was deleted".into()),
            Error::AgentBusy {
                detail,
                retry_after_s,
            } => problem("Agent busy", detail.clone()).retryable(Some(*retry_after_s)),
            Error::PreconditionFailed { .. } => problem("Precondition failed", err.to_string()),
            Error::InvalidRequest { detail, .. } => problem("Invalid request", detail.clone()),
            Error::NotWakeable(detail) => problem("Agent not wakeable", detail.clone()),
            Error::NotSleepable(detail) => problem("Agent not sleepable", detail.clone()),
            Error::NotAwake(detail) => problem("Agent not awake", detail.clone()),
            Error::SleepFailed(_) => problem(
                "Sleep failed",
                "the snapshot was not taken; the agent is still awake, retry the sleep".into(),
            )
            .retryable(kept),
            Error::PayloadTooLarge { .. } => problem("Payload too large", err.to_string()),
            Error::MethodNotAllowed { allow } => Problem {
                allow: Some(allow.clone()),
                ..problem("Method not allowed", err.to_string())
            },
            Error::RouteNotFound => problem("Not found", "no such route".into()),
            Error::NotConfigured(detail) => problem("Not configured", detail.clone()),
            Error::Deferred {
                detail,
                retry_after_s,
            } => problem("Try again", detail.clone()).retryable(Some(*retry_after_s)),
            Error::AgentKit(e) => agentkit_problem(problem, e),
            Error::WakeFailed(_) => problem(
                "Wake failed",
                "the sandbox did not start; its snapshot is intact, retry the resume".into(),
            )
            .retryable(kept),
            Error::SnapshotStuck { snapshot_id } => problem(
                "Snapshot stuck",
                format!(
                    "AgentKit has been making snapshot {snapshot_id} for longer than expected; \
                     retry later, or wake an older snapshot by its snapshot_id"
                ),
            )
            .retryable(None),
            Error::SessionStuck(_) => problem(
                "Wake stuck",
                "the sandbox did not become ready in time; retry the resume: the stuck sandbox \
                 is ended and the agent started again from its snapshot, which is intact"
                    .into(),
            )
            .retryable(None),
            Error::UnknownStatus { .. } => problem(
                "AgentKit status unknown",
                format!("{err}; nothing was started beside it, retry later or delete the agent"),
            )
            .retryable(None),
            Error::Store(StoreError::Unavailable(_)) => problem(
                "Store unavailable",
                "the agent table could not be reached; retry shortly".into(),
            )
            .retryable(Some(1)),
            Error::Store(StoreError::InvalidCursor(_)) => problem(
                "Invalid request",
                "the cursor is malformed or was not issued for this listing".into(),
            ),
            Error::Internal(_) | Error::Store(_) => problem(
                "Internal error",
                "snapwake failed to answer; the failure is logged".into(),
            ),
        }
    }
}

fn agentkit_problem(
    problem: impl Fn(&'static str, String) -> Problem,
    err: &AgentKitError,
) -> Problem {
    match err {
        AgentKitError::Throttled { retry_after, .. } => problem(
            "AgentKit throttled",
            "AgentKit is throttling requests; retry later".into(),
        )
        .retryable(Some(retry_after.map_or(1, |d| d.as_secs().max(1)))),
        AgentKitError::Credentials(_) => problem(
            "Not configured",
            "AgentKit credentials are not configured".into(),
        ),
        other => {
            let p = problem(
                "AgentKit error",
                format!(
                    "AgentKit {} failed ({})",
                    other.action(),
                    other.code().unwrap_or("no code")
                ),
            );
            if other.is_retryable() {
                p.retryable(None)
            } else {
                p
            }
        }
    }
}

impl Error {
    pub fn into_response(&self, request_id: Option<&str>) -> http::Response<Body> {
        let mut p = Problem::from(self);
        if let Some(id) = request_id {
            p = p.with_request_id(id);
        }
        p.into_response()
    }
}

#[cfg(test)]
mod tests;
