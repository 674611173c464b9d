//! RFC 9457 problem+json, the one place an [`Error`] becomes an HTTP answer:
//! `{"type", "title", "status", "detail", "code", "retryable", "request_id"}`, plus `Retry-After`
//! or `Allow`. `detail` is chosen here: never provider messages, secrets, endpoints or traces.

use crate::agentkit::AgentKitError;
use crate::domain::failure::OUTCOME_KEPT;
use crate::error::Error;
use crate::store::StoreError;
use lambda_http::Body;
use serde::Serialize;

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
