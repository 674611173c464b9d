//! API Gateway HTTP API (payload 2.0) requests built from the fixture of a real event, and
//! reading the answers (status, JSON, problem+json).

use serde_json::Value;

/// Who makes a request.
#[derive(Clone, Copy, Debug)]
pub enum Who<'a> {
    /// A signed-in person with this `sub`.
    User(&'a str),
    /// A signed-in person in the `admins` group.
    Admin(&'a str),
    /// No authorizer at all.
    Nobody,
}

/// An API Gateway HTTP API (payload 2.0) request, built from the recorded JWT fixture (see
/// [`event`]).
pub fn request(
    method: &str,
    raw_path: &str,
    who: Who<'_>,
    body: Option<&str>,
) -> lambda_http::Request {
    from_event(&event(method, raw_path, who, body))
}

/// A [`request`] without a body by alice, the owner of most tests' agents.
pub fn alices_request(method: &str, raw_path: &str) -> lambda_http::Request {
    request(method, raw_path, Who::User("alice"), None)
}

/// The identity configuration of the tests: the `admins` group is admin.
pub fn identity() -> snapwake::identity::IdentityConfig {
    snapwake::identity::IdentityConfig {
        admin_groups: vec!["admins".into()],
        ..Default::default()
    }
}

/// Status and JSON body of a response.
pub fn answer(resp: &lambda_http::Response<lambda_http::Body>) -> (u16, Value) {
    let body = match resp.body() {
        lambda_http::Body::Text(t) => serde_json::from_str(t).unwrap_or(Value::Null),
        lambda_http::Body::Binary(b) => serde_json::from_slice(b).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (resp.status().as_u16(), body)
}

/// `POST /v1/agents` by `who` with `body`, and the `Idempotency-Key` given (the JWT fixture
/// carries one; `None` removes it).
pub fn create_request(
    who: Who<'_>,
    body: &str,
    idempotency_key: Option<&str>,
) -> lambda_http::Request {
    let mut req = request("POST", "/v1/agents", who, Some(body));
    let headers = req.headers_mut();
    headers.remove("idempotency-key");
    if let Some(key) = idempotency_key {
        headers.insert("idempotency-key", key.parse().unwrap());
    }
    req
}

/// `request` asking to be held up to `seconds` (RFC 7240 `Prefer: wait`, docs/wake-protocol.md,
/// "Short requests").
pub fn prefer_wait(mut request: lambda_http::Request, seconds: u64) -> lambda_http::Request {
    let value = format!("wait={seconds}");
    request
        .headers_mut()
        .insert("prefer", value.parse().expect("a valid header value"));
    request
}

/// A header of a response as text.
pub fn header_of<'r>(
    resp: &'r lambda_http::Response<lambda_http::Body>,
    name: &str,
) -> Option<&'r str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Whether a client asks again after `resp`, and after how long: the `Retry-After` of a 202
/// still at work, or of any problem that says `"retryable": true` (a 503 of a table that
/// could not keep up, a 429, a 409 of an agent too contended to decide this round), as clients
/// honouring them do; `None`: the answer is final.
pub fn ask_again_after(
    resp: &lambda_http::Response<lambda_http::Body>,
) -> Option<std::time::Duration> {
    let status = resp.status().as_u16();
    let retryable = status == 202 || answer(resp).1["retryable"] == true;
    let seconds = header_of(resp, "retry-after").and_then(|s| s.parse().ok());
    retryable.then(|| std::time::Duration::from_secs(seconds.unwrap_or(1)))
}

/// [`request`] with query string parameters (as API Gateway passes them).
pub fn request_query(
    method: &str,
    raw_path: &str,
    query: &[(&str, &str)],
    who: Who<'_>,
) -> lambda_http::Request {
    use lambda_http::RequestExt;
    let map: std::collections::HashMap<String, String> = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    request(method, raw_path, who, None).with_query_string_parameters(map)
}

/// `request` with one more header.
pub fn with_header(
    mut request: lambda_http::Request,
    name: &'static str,
    value: &str,
) -> lambda_http::Request {
    request
        .headers_mut()
        .insert(name, http::HeaderValue::from_str(value).unwrap());
    request
}

/// The API Gateway v2 event [`request`] builds, as JSON to edit before [`from_event`].
pub fn event(method: &str, raw_path: &str, who: Who<'_>, body: Option<&str>) -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/apigw/jwt-no-groups.json"
    ))
    .unwrap();
    let mut event: Value = serde_json::from_str(&text).unwrap();
    event["rawPath"] = raw_path.into();
    event["routeKey"] = format!("{method} {raw_path}").into();
    event["requestContext"]["http"]["method"] = method.into();
    event["requestContext"]["http"]["path"] = raw_path.into();
    event["requestContext"]["requestId"] = uuid::Uuid::new_v4().simple().to_string().into();
    event["body"] = body.map_or(Value::Null, Value::from);
    let headers = event["headers"].as_object_mut().unwrap();
    headers.remove("idempotency-key");
    headers.remove("content-length");
    let claims = &mut event["requestContext"]["authorizer"]["jwt"]["claims"];
    match who {
        Who::User(sub) => {
            claims["sub"] = sub.into();
            claims["preferred_username"] = sub.into();
        }
        Who::Admin(sub) => {
            claims["sub"] = sub.into();
            claims["preferred_username"] = sub.into();
            claims["cognito:groups"] = "[admins]".into();
        }
        Who::Nobody => {
            event["requestContext"]
                .as_object_mut()
                .unwrap()
                .remove("authorizer");
        }
    }
    event
}

/// The request of an (edited) [`event`].
pub fn from_event(event: &Value) -> lambda_http::Request {
    lambda_http::request::from_str(&event.to_string()).unwrap()
}

/// The request id an event carries.
pub fn request_id_of(event: &Value) -> String {
    event["requestContext"]["requestId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Why `resp` is not a well-formed problem+json answer of `status`, if it is not: the
/// `Content-Type`, `status` and `code` (upper snake case) in the body, `type`
/// `urn:snapwake:problem:<code in kebab case>`, a title, and `request_id` when one is given.
pub fn problem_fault(
    resp: &lambda_http::Response<lambda_http::Body>,
    status: u16,
    request_id: Option<&str>,
) -> Option<String> {
    let (got, body) = answer(resp);
    let content_type = header_of(resp, "content-type").unwrap_or("");
    let code = body["code"].as_str().unwrap_or("");
    let kebab = code.to_ascii_lowercase().replace('_', "-");
    let faults = [
        (got != status, format!("status {got}, want {status}")),
        (
            content_type != "application/problem+json",
            format!("Content-Type {content_type:?}"),
        ),
        (
            body["status"] != status,
            format!("body status {}", body["status"]),
        ),
        (
            code.is_empty()
                || !code
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()),
            format!("code {:?}", body["code"]),
        ),
        (
            body["type"] != format!("urn:snapwake:problem:{kebab}").as_str(),
            format!("type {}", body["type"]),
        ),
        (
            body["title"].as_str().is_none_or(str::is_empty),
            "no title".to_string(),
        ),
        (
            request_id.is_some_and(|id| body["request_id"] != id),
            format!("request_id {}", body["request_id"]),
        ),
    ];
    let wrong: Vec<String> = faults
        .into_iter()
        .filter(|(bad, _)| *bad)
        .map(|(_, why)| why)
        .collect();
    (!wrong.is_empty()).then(|| format!("{} (body {body})", wrong.join("; ")))
}
