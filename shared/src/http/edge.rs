//! The HTTP edge: reading an API Gateway HTTP API request (each failure a typed [`Error`], a
//! 4xx, never a panic), serving it in the invocation's span, and every answer: JSON with its
//! headers, or problem+json with the request id, logged once by status (a 5xx is ours or a
//! dependency's to fix: `warn`; a 4xx the caller's: `info`). Details never go into the body.
//!
//! A request's JSON body, read with a cap; each failure a typed [`Error`] (a 4xx).

use super::problem::Problem;
use crate::domain::{AgentKey, AgentRecord, Kind};
use crate::error::{Error, Result};
use crate::identity::validate_agent_id;
use crate::invocation;
use futures::FutureExt;
use http::HeaderMap;
use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use lambda_http::{Body, Request, RequestExt, Response};
use percent_encoding::percent_decode_str;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;
use tracing::Instrument;

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
/// under `prefix` ([`super::edge::prefix`]) so it works from where the client stands.
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

/// One route of a function: a method and a path pattern whose `{name}` segments capture.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    pub method: &'static str,
    pub pattern: &'static str,
}

impl Route {
    pub const fn new(method: &'static str, pattern: &'static str) -> Self {
        Route { method, pattern }
    }
}

/// The route a request matched, with its captured (percent-decoded) segments in order.
#[derive(Debug, PartialEq, Eq)]
pub struct Matched {
    pub pattern: &'static str,
    pub params: Vec<String>,
}

/// Match `method` and `path`: an unknown path → 404, a known one with another method → 405.
pub fn route(routes: &[Route], method: &str, path: &str) -> Result<Matched> {
    let mut allowed: Vec<&str> = Vec::new();
    for r in routes {
        if let Some(params) = match_path(r.pattern, path)? {
            if r.method.eq_ignore_ascii_case(method) {
                return Ok(Matched {
                    pattern: r.pattern,
                    params,
                });
            }
            allowed.push(r.method);
        }
    }
    if allowed.is_empty() {
        Err(Error::RouteNotFound)
    } else {
        Err(Error::MethodNotAllowed {
            allow: allowed.join(", "),
        })
    }
}

/// Captures of `path` against `pattern`, each percent-decoded exactly once (not UTF-8: 400).
fn match_path(pattern: &str, path: &str) -> Result<Option<Vec<String>>> {
    let want: Vec<&str> = pattern.trim_matches('/').split('/').collect();
    let got: Vec<&str> = path
        .trim_end_matches('/')
        .trim_start_matches('/')
        .split('/')
        .collect();
    if want.len() != got.len() {
        return Ok(None);
    }
    let mut params = Vec::new();
    for (w, g) in want.iter().zip(&got) {
        if w.starts_with('{') && w.ends_with('}') {
            let decoded = percent_decode_str(g)
                .decode_utf8()
                .map_err(|_| Error::bad_request("a path segment is not valid UTF-8"))?;
            params.push(decoded.into_owned());
        } else if w != g {
            return Ok(None);
        }
    }
    Ok(Some(params))
}

/// The variable naming a custom domain's base path (`/api`), if the API is mapped under one.
pub const BASE_PATH_VAR: &str = "SNAPWAKE_BASE_PATH";

/// The configured base path (`None`: unset, empty or `/`), read once; checked at cold start.
pub fn base_path() -> Option<&'static str> {
    static BASE: OnceLock<Option<String>> = OnceLock::new();
    BASE.get_or_init(|| {
        std::env::var(BASE_PATH_VAR)
            .ok()
            .and_then(|v| normalise_base_path(&v))
    })
    .as_deref()
}

/// `raw` as a base path (`api/`, `/api`, `/api/` are all `/api`); `None` for none at all.
pub fn normalise_base_path(raw: &str) -> Option<String> {
    let trimmed = raw.trim().trim_matches('/');
    (!trimmed.is_empty()).then(|| format!("/{trimmed}"))
}

/// What API Gateway put before snapwake's own path: a named stage (`/prod`; `$default` adds
/// nothing) and the base path, in the client URL's order. Empty when neither, as locally.
pub fn prefix(req: &Request) -> String {
    let mut prefix = String::new();
    if let Some(base) = base_path() {
        prefix.push_str(base);
    }
    if let Some(stage) = stage(req) {
        let raw = raw_path(req);
        // A custom domain maps a stage without naming it; `execute-api` URLs name it first.
        if starts_with_segment(raw, &format!("/{stage}")) {
            return format!("/{stage}{prefix}");
        }
    }
    prefix
}

/// The path as sent (percent-encoded, for [`route`] to decode once), without [`prefix`]. One
/// not under the prefix is kept whole (and matches no route: 404).
pub fn path(req: &Request) -> &str {
    let raw = raw_path(req);
    let prefix = prefix(req);
    if prefix.is_empty() || !starts_with_segment(raw, &prefix) {
        return raw;
    }
    match &raw[prefix.len()..] {
        "" => "/",
        rest => rest,
    }
}

fn stage(req: &Request) -> Option<String> {
    match req.request_context_ref() {
        Some(lambda_http::request::RequestContext::ApiGatewayV2(ctx)) => ctx
            .stage
            .clone()
            .filter(|s| !s.is_empty() && s != "$default"),
        _ => None,
    }
}

fn raw_path(req: &Request) -> &str {
    let raw = req.raw_http_path();
    if raw.is_empty() {
        req.uri().path()
    } else {
        raw
    }
}

fn starts_with_segment(path: &str, segment: &str) -> bool {
    path.strip_prefix(segment)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

pub fn parse_kind(raw: &str) -> Result<Kind> {
    raw.parse::<Kind>()
        .map_err(|e| Error::bad_request(e.to_string()))
}

/// A `{agent_id}` (or snapshot id) path parameter: `^[A-Za-z0-9_.:-]{1,200}$`.
pub fn parse_id(raw: &str) -> Result<String> {
    validate_agent_id(raw).map(str::to_string)
}

pub fn header<'r>(req: &'r Request, name: &str) -> Option<&'r str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// The id API Gateway gave this request (logged and returned in problems), else Lambda's.
pub fn request_id(req: &Request) -> Option<String> {
    if let Some(lambda_http::request::RequestContext::ApiGatewayV2(ctx)) = req.request_context_ref()
    {
        if let Some(id) = &ctx.request_id {
            return Some(id.clone());
        }
    }
    req.lambda_context_ref().map(|c| c.request_id.clone())
}

// ---- RFC 7240 `Prefer: wait=<seconds>`: how long a resume or sleep may hold its request
// (docs/wake-protocol.md, "Short requests"). A hint (§2): an unreadable one is ignored. Names are
// case-insensitive, values may be quoted, the first `wait` of any line counts.

/// The most a client may ask for: API Gateway cuts HTTP requests at 30 s.
pub const MAX_WAIT: Duration = Duration::from_secs(20);

/// The `wait` preference of `headers`, at most [`MAX_WAIT`] (`None`: none, or unreadable).
pub fn preferred_wait(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|line| line.split(','))
        .find_map(|preference| {
            // Parameters after `;` belong to the preference, not to its value.
            let token = preference.split(';').next()?.trim();
            let (name, value) = token.split_once('=')?;
            if !name.trim().eq_ignore_ascii_case("wait") {
                return None;
            }
            let value = value.trim().trim_matches('"');
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Digits only: a number too large for u64 is simply "as long as allowed".
            let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
            Some(Duration::from_secs(seconds).min(MAX_WAIT))
        })
}

/// The `Preference-Applied` value for a wait of `applied` (whole seconds, rounded down).
pub fn preference_applied(applied: Duration) -> String {
    format!("wait={}", applied.as_secs())
}

/// Bodies above this are refused with 413.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

pub fn body_bytes(req: &Request) -> Result<&[u8]> {
    let bytes: &[u8] = match req.body() {
        Body::Empty => &[],
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b.as_slice(),
        _ => &[],
    };
    if bytes.len() > MAX_BODY_BYTES {
        return Err(Error::PayloadTooLarge {
            limit: MAX_BODY_BYTES,
        });
    }
    Ok(bytes)
}

/// An optional JSON body: absent or blank → `None`; malformed → 400. A non-object is refused
/// first: serde would read a struct from an array too (`[]` as a struct of optional fields).
pub fn optional_json<T: DeserializeOwned>(req: &Request) -> Result<Option<T>> {
    let bytes = body_bytes(req)?;
    let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Ok(None);
    };
    if *first != b'{' {
        return Err(Error::bad_request("the JSON body must be an object"));
    }
    serde_json::from_slice(bytes)
        .map(Some)
        .map_err(|e| Error::bad_request(format!("invalid JSON body: {}", json_error(&e))))
}

pub fn json_body<T: DeserializeOwned>(req: &Request) -> Result<T> {
    optional_json(req)?.ok_or_else(|| Error::bad_request("a JSON body is required"))
}

/// serde's message without echoing the input back.
fn json_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            format!("malformed JSON at line {} column {}", e.line(), e.column())
        }
        Category::Data => e.to_string(),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod request_tests;

#[cfg(test)]
mod prefer_tests;
