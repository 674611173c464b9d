//! The HTTP edge: how every function turns a handler's result into the answer API Gateway
//! sends back. A success passes through; a failure becomes problem+json carrying the request
//! id, and is logged once, by its status: a 5xx is ours or a dependency's to fix (`warn`), a
//! 4xx is the caller's to fix (`info`). Details go to the log, never into the body.

use lambda_http::{Body, Response};

use crate::error::Error;

use super::problem::Problem;

/// The answer to a request whose handler returned `result`.
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
