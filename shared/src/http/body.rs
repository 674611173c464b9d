//! A request's JSON body, read with a cap; each failure a typed [`Error`] (a 4xx).

use crate::error::{Error, Result};
use lambda_http::{Body, Request};
use serde::de::DeserializeOwned;

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
