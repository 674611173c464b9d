//! Successful JSON responses.

use lambda_http::Body;
use serde::Serialize;

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
