//! The HTTP edge: how every function serves a request ([`serve`]: in the invocation's span,
//! so every line logged for it carries its ids) and turns a handler's result into the answer
//! API Gateway sends back. A success passes through; a failure becomes problem+json carrying
//! the request id, and is logged once, by its status: a 5xx is ours or a dependency's to fix
//! (`warn`), a 4xx is the caller's to fix (`info`). Details go to the log, never into the body.

use std::future::Future;

use futures::FutureExt;
use lambda_http::{Body, Request, Response};
use tracing::Instrument;

use crate::error::Error;
use crate::invocation;

use super::problem::Problem;
use super::request::request_id;

/// Serve `request`: `work` (the function's handling of it), then its answer ([`answer`]), both
/// inside the invocation's span ([`invocation::begin_http`]). Every HTTP function's `handle`
/// goes through here, so none can forget the span.
///
/// `work` is mapped, not awaited in an `async` block: such a block keeps the future it captured
/// and the one it awaits side by side, twice the handler's future (tens of KB in a debug build),
/// and the tests' stacks overflowed. Mapped, it is held once, as when a handler awaited it.
pub fn serve<'w>(
    request: &Request,
    work: impl Future<Output = crate::Result<Response<Body>>> + 'w,
) -> impl Future<Output = Response<Body>> + 'w {
    let request_id = request_id(request);
    let span = invocation::begin_http(request);
    work.map(move |result| answer(result, request_id.as_deref()))
        .instrument(span)
}

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
