//! Successful JSON responses and the headers that name an agent's version and address.

use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use lambda_http::Body;
use serde::Serialize;

use crate::domain::{AgentKey, AgentRecord};

/// `status` with `value` as a JSON body.
pub fn json<T: Serialize>(status: u16, value: &T) -> http::Response<Body> {
    let body = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::Text(body))
        .unwrap_or_else(|_| http::Response::new(Body::Empty))
}

/// A 204 without a body.
pub fn no_content() -> http::Response<Body> {
    http::Response::builder()
        .status(204)
        .body(Body::Empty)
        .unwrap_or_else(|_| http::Response::new(Body::Empty))
}

/// `response` with `record`'s version as its `ETag` (a record never written has none: there
/// is nothing to match an `If-Match` against).
pub fn with_etag(mut response: http::Response<Body>, record: &AgentRecord) -> http::Response<Body> {
    if record.version > 0 {
        if let Ok(value) = record.etag().parse() {
            response.headers_mut().insert(http::header::ETAG, value);
        }
    }
    response
}

/// `response` with the agent's address as its `Location`: where a 201 created it, where a 202
/// says to read how the work goes on. `prefix` is what API Gateway put before the route
/// ([`super::request::prefix`]), so the address works from where the client stands.
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

/// `response` as the JSON a Lambda answers API Gateway (HTTP API, payload 2.0) with: what a
/// function invoked directly returns, and what `snapwake invoke` prints.
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
