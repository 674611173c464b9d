//! The 202 every route of the function answers while its work goes on: ask again after
//! `Retry-After`, or read the agent at `Location` (docs/wake-protocol.md, "Short requests").

use lambda_http::http::header;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use snapwake::ambient::now_ms;
use snapwake::domain::AgentRecord;
use snapwake::http::edge;
use snapwake::invocation::Pace;

/// A 202: still at work; ask again after `Retry-After`, or read the agent at `Location`.
/// `Retry-After` is the pause a poller keeps between two questions to AgentKit about this
/// work (one second at first, longer once it has taken a while): a client that honours it
/// sees the 200 within about one pause of the work being done (docs/wake-protocol.md, "Short
/// requests").
pub(crate) fn accepted<T: Serialize>(
    body: &T,
    record: &AgentRecord,
    request: &Request,
    pace: Pace,
) -> Response<Body> {
    let mut resp = edge::with_location(
        edge::with_etag(edge::json(202, body), record),
        &edge::prefix(request),
        &record.key,
    );
    let retry_after_s = pace.retry_after_s(record.awaited_since_ms, now_ms());
    resp.headers_mut()
        .insert(header::RETRY_AFTER, retry_after_s.into());
    resp
}
