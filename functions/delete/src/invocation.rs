//! Everything that can invoke the delete function, told apart by its shape (docs/operations.md,
//! "Events"); [`crate::events`] serves each:
//!
//! - an API Gateway HTTP API request (payload 2.0): the DELETE routes;
//! - the retention sweep's schedule: the rule's constant input `{"action": "sweep"}` (with
//!   `"every_min"`: a pass begins that often, the runs between continue it), or an
//!   EventBridge `Scheduled Event` envelope (with `{"action": "sweep"}` as its detail, or an
//!   empty one: this function has no other schedule);
//! - the index refresh's schedule: `{"action": "refresh"}` (every minute);
//! - an EventBridge event `detail-type: "snapwake.owner.offboarded"`, `detail: {"owner"}`,
//!   with the `source` that sent it (checked against the configured sources when served).
//!
//! Anything else is a function error that names what arrived (its `detail-type` and `source`,
//! or its top-level keys — never its values).

use serde_json::Value;
use snapwake::error::Error;

/// The `detail-type` of an offboarding event.
pub const OFFBOARDED: &str = "snapwake.owner.offboarded";
/// The `detail-type` EventBridge gives scheduled events.
pub const SCHEDULED: &str = "Scheduled Event";

/// What an invocation asks for.
#[derive(Debug)]
pub enum Invocation {
    Http(Box<lambda_http::Request>),
    /// `every`: the schedule fires more often than passes begin; a run continues a pass in
    /// progress, and begins one only `every` after the last began (`"every_min"` in the
    /// input). None: a pass, now.
    Sweep {
        every: Option<std::time::Duration>,
    },
    Refresh,
    Offboard {
        owner: String,
        /// The event's `source` (`None`: it named none).
        source: Option<String>,
    },
}

/// Tell an invocation's payload apart.
pub fn classify(event: &Value) -> Result<Invocation, Error> {
    let Some(object) = event.as_object() else {
        return Err(unknown(event));
    };
    if object.contains_key("requestContext")
        && (object.contains_key("routeKey") || object.contains_key("rawPath"))
    {
        let request = lambda_http::request::from_str(&event.to_string())
            .map_err(|e| Error::bad_request(format!("unreadable API Gateway request: {e}")))?;
        return Ok(Invocation::Http(Box::new(request)));
    }
    match object.get("action").and_then(Value::as_str) {
        Some("sweep") => return Ok(sweep(event)),
        Some("refresh") => return Ok(Invocation::Refresh),
        _ => {}
    }
    match object.get("detail-type").and_then(Value::as_str) {
        Some(SCHEDULED) => {
            let detail = object.get("detail");
            let empty = detail.is_none_or(|d| d.as_object().is_some_and(|o| o.is_empty()));
            match detail.and_then(|d| d.get("action")).and_then(Value::as_str) {
                Some("sweep") => Ok(sweep(detail.unwrap_or(event))),
                Some("refresh") => Ok(Invocation::Refresh),
                _ if empty => Ok(Invocation::Sweep { every: None }),
                _ => Err(unknown(event)),
            }
        }
        Some(OFFBOARDED) => {
            let owner = object
                .get("detail")
                .and_then(|d| d.get("owner"))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .ok_or_else(|| {
                    Error::bad_request(format!(
                        "a {OFFBOARDED} event needs detail.owner, a non-empty string"
                    ))
                })?;
            Ok(Invocation::Offboard {
                owner: owner.to_string(),
                source: object
                    .get("source")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        }
        _ => Err(unknown(event)),
    }
}

/// A sweep, with the interval of its passes when the input names one (`"every_min"`).
fn sweep(input: &Value) -> Invocation {
    let every = input
        .get("every_min")
        .and_then(Value::as_u64)
        .filter(|m| *m > 0)
        .map(|m| std::time::Duration::from_secs(m * 60));
    Invocation::Sweep { every }
}

/// The error for a payload this function does not handle: what it was, never its values.
fn unknown(event: &Value) -> Error {
    let what = match event.as_object() {
        Some(o) => {
            let field = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("none");
            let keys: Vec<&str> = o.keys().map(String::as_str).take(12).collect();
            format!(
                "an event with detail-type {:?}, source {:?} and keys {keys:?}",
                field("detail-type"),
                field("source")
            )
        }
        None => format!("a JSON {}", kind_of(event)),
    };
    Error::bad_request(format!(
        "the delete function handles API Gateway requests, the sweep and refresh schedules \
         and {OFFBOARDED} events, not {what}"
    ))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
