//! The answer to an action request: the AgentKit envelope (`ResponseMetadata` and `Result`,
//! or `ResponseMetadata.Error`), `Retry-After`, or a bare status for a bare injected fault.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

use crate::error::SimError;
use snapwake::agentkit::answer::{ApiError, Envelope, ResponseMetadata};

pub(super) fn respond(mut meta: ResponseMetadata, outcome: Result<Value, SimError>) -> Response {
    match outcome {
        Ok(result) => Json(Envelope {
            response_metadata: meta,
            result: Some(result),
        })
        .into_response(),
        Err(e) if e.bare => {
            let mut resp = (e.http_status(), "Service Unavailable\n").into_response();
            if let Some(secs) = e.retry_after {
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            resp
        }
        Err(e) => {
            meta.error = Some(ApiError {
                code: e.code.clone(),
                message: e.message.clone(),
            });
            let body = Json(Envelope::<Value> {
                response_metadata: meta,
                result: None,
            });
            let mut resp = (e.http_status(), body).into_response();
            if let Some(secs) = e.retry_after {
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            }
            resp
        }
    }
}
