//! From a plain HTTP request to the API Gateway HTTP API (payload 2.0) event a Lambda receives,
//! and back. The local server builds the same JSON event API Gateway would send and parses it
//! with `lambda_http`'s own parser, so the handlers see exactly what they see in Lambda.
//!
//! Identity: the local headers `X-Snapwake-User: <owner>` and `X-Snapwake-Admin: 1` become the
//! claims a JWT authorizer would have verified (`sub`, `preferred_username`, and membership of
//! [`LOCAL_ADMIN_GROUP`]). Only this server does that; the Lambda functions never read these
//! headers.

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Uri};
use data_encoding::BASE64;
use serde_json::{json, Map, Value};

/// The group `X-Snapwake-Admin: 1` puts a local caller in; the server's identity
/// configuration makes it an admin group.
pub const LOCAL_ADMIN_GROUP: &str = "snapwake-local-admins";
pub const USER_HEADER: &str = "x-snapwake-user";
pub const ADMIN_HEADER: &str = "x-snapwake-admin";

/// The API Gateway v2 event for this request.
pub fn event(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
    request_id: &str,
) -> Value {
    let mut hdrs = Map::new();
    for (name, value) in headers {
        let name = name.as_str();
        if name == USER_HEADER || name == ADMIN_HEADER {
            continue;
        }
        if let Ok(v) = value.to_str() {
            // API Gateway joins repeated headers with commas.
            let joined = match hdrs.get(name).and_then(Value::as_str) {
                Some(prev) => format!("{prev},{v}"),
                None => v.to_string(),
            };
            hdrs.insert(name.to_string(), Value::String(joined));
        }
    }
    let mut context = json!({
        "accountId": "000000000000",
        "apiId": "local",
        "domainName": "127.0.0.1",
        "domainPrefix": "local",
        "http": {
            "method": method.as_str(),
            "path": uri.path(),
            "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1",
            "userAgent": headers.get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or(""),
        },
        "requestId": request_id,
        "routeKey": "$default",
        "stage": "$default",
        "timeEpoch": time::OffsetDateTime::now_utc().unix_timestamp() * 1000,
    });
    let user = headers
        .get(USER_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|u| !u.is_empty());
    if let Some(user) = user {
        let mut claims = json!({"sub": user, "preferred_username": user});
        let admin = headers
            .get(ADMIN_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| matches!(v.trim(), "1" | "true"));
        if admin {
            claims["cognito:groups"] = Value::String(format!("[{LOCAL_ADMIN_GROUP}]"));
        }
        context["authorizer"] = json!({"jwt": {"claims": claims, "scopes": null}});
    }
    let (body, is_base64) = match std::str::from_utf8(body) {
        _ if body.is_empty() => (Value::Null, false),
        Ok(text) => (Value::String(text.to_string()), false),
        Err(_) => (Value::String(BASE64.encode(body)), true),
    };
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": uri.path(),
        "rawQueryString": uri.query().unwrap_or(""),
        "headers": hdrs,
        "requestContext": context,
        "body": body,
        "isBase64Encoded": is_base64,
    })
}

/// Parse the event as `lambda_http` does in Lambda.
pub fn lambda_request(event: &Value) -> Result<lambda_http::Request, String> {
    lambda_http::request::from_str(&event.to_string()).map_err(|e| e.to_string())
}

/// A handler's response as an axum response.
pub fn axum_response(resp: lambda_http::Response<lambda_http::Body>) -> axum::response::Response {
    let (parts, body) = resp.into_parts();
    let bytes: Vec<u8> = match body {
        lambda_http::Body::Empty => Vec::new(),
        lambda_http::Body::Text(t) => t.into_bytes(),
        lambda_http::Body::Binary(b) => b,
        _ => Vec::new(),
    };
    axum::response::Response::from_parts(parts, axum::body::Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::RequestExt;
    use snapwake::identity::Caller;
    use snapwake::identity::IdentityConfig;

    fn req(headers: &[(&str, &str)], uri: &str, body: &str) -> lambda_http::Request {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let e = event(
            &Method::POST,
            &uri.parse().unwrap(),
            &map,
            &Bytes::from(body.to_string()),
            "r-1",
        );
        lambda_request(&e).unwrap()
    }

    #[test]
    fn local_headers_become_verified_claims() {
        let config = IdentityConfig {
            admin_groups: vec![LOCAL_ADMIN_GROUP.into()],
            ..IdentityConfig::default()
        };
        let r = req(
            &[("x-snapwake-user", "alice")],
            "/v1/agents?kind=codex",
            "{}",
        );
        let caller = Caller::from_request(&r, &config).unwrap();
        assert_eq!(caller.owner, "alice");
        assert!(!caller.is_admin);
        assert_eq!(r.query_string_parameters().first("kind"), Some("codex"));
        assert!(r.headers().get(USER_HEADER).is_none(), "not passed on");
        let r = req(
            &[("x-snapwake-user", "root"), ("x-snapwake-admin", "1")],
            "/v1/agents",
            "",
        );
        assert!(Caller::from_request(&r, &config).unwrap().is_admin);
        let r = req(&[], "/v1/agents", "");
        assert!(
            Caller::from_request(&r, &config).is_err(),
            "no header, no identity"
        );
    }

    #[test]
    fn paths_stay_encoded_for_the_router() {
        let r = req(
            &[("x-snapwake-user", "a")],
            "/v1/agents/codex/a%2Fb/resume",
            "",
        );
        assert_eq!(
            snapwake::http::edge::path(&r),
            "/v1/agents/codex/a%2Fb/resume"
        );
    }
}
