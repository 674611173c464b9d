//! What the AWS doubles (EventBridge, SQS) check of a JSON-protocol call before reading it:
//! its target, its content type, and its SigV4 signature, recomputed from what arrived with
//! the test credentials at the time the request's `X-Amz-Date` says. A double that refuses a
//! wrong signature proves the client signs what it sends, as AWS would. And the shape of a
//! refusal: `{"__type", "message"}`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use aws_credential_types::provider::SharedCredentialsProvider;
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use axum::http::{HeaderMap, StatusCode};
use serde_json::json;

/// Who signs, where, for which service.
#[derive(Clone, Copy, Debug)]
pub struct SigningKey {
    pub access_key: &'static str,
    pub secret_key: &'static str,
    pub region: &'static str,
    pub service: &'static str,
}

/// An AWS error answer.
pub fn refuse(status: StatusCode, kind: &str, message: &str) -> (StatusCode, String) {
    (
        status,
        json!({"__type": kind, "message": message}).to_string(),
    )
}

/// The refusal AWS answers a call to `target` with `content_type`, signed with `key`, that is
/// not one (`None`: it is; go on reading it). A wrong signature is counted in `bad`.
pub fn refused(
    (target, content_type, key): (&str, &str, &SigningKey),
    headers: &HeaderMap,
    body: &[u8],
    bad: &AtomicU32,
) -> Option<(StatusCode, String)> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if header("x-amz-target") != Some(target) {
        return Some(refuse(
            StatusCode::BAD_REQUEST,
            "UnknownOperationException",
            "target",
        ));
    }
    if header("content-type") != Some(content_type) {
        let kind = "SerializationException";
        return Some(refuse(StatusCode::BAD_REQUEST, kind, "content-type"));
    }
    if !signature_holds(key, headers, body) {
        bad.fetch_add(1, Ordering::SeqCst);
        return Some(refuse(
            StatusCode::FORBIDDEN,
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided.",
        ));
    }
    None
}

/// Serve `app` on a free loopback port: its endpoint, `http://127.0.0.1:<port>/`.
pub async fn serve_double(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the double");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/")
}

/// The AWS configuration of a client of a double: `key`'s region and access key, signing
/// with `secret` (the double refuses any but `key`'s).
pub fn signing_config(key: &SigningKey, secret: &str) -> aws_config::SdkConfig {
    let credentials = Credentials::new(key.access_key, secret, None, None, "double");
    aws_config::SdkConfig::builder()
        .region(aws_config::Region::new(key.region))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .behavior_version(aws_config::BehaviorVersion::latest())
        .build()
}

/// A double's state, whatever a panicking test left in it.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether the request's `Authorization` is the SigV4 signature of a JSON-protocol `POST /`
/// (signed headers: host, content-type, x-amz-target) carrying `body`, made with `key`.
pub fn signature_holds(key: &SigningKey, headers: &HeaderMap, body: &[u8]) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(given), Some(date), Some(host)) = (
        header("authorization"),
        header("x-amz-date"),
        header("host"),
    ) else {
        return false;
    };
    let Some(time) = amz_date(date) else {
        return false;
    };
    let identity: Identity =
        Credentials::new(key.access_key, key.secret_key, None, None, "double").into();
    let Ok(params) = v4::SigningParams::builder()
        .identity(&identity)
        .region(key.region)
        .name(key.service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
    else {
        return false;
    };
    let signed = [
        ("host", host),
        ("content-type", header("content-type").unwrap_or_default()),
        ("x-amz-target", header("x-amz-target").unwrap_or_default()),
    ];
    let uri = format!("http://{host}/");
    let Ok(signable) = SignableRequest::new(
        "POST",
        &uri,
        signed.iter().copied(),
        SignableBody::Bytes(body),
    ) else {
        return false;
    };
    let Ok(output) = sign(signable, &params.into()) else {
        return false;
    };
    let (instructions, _) = output.into_parts();
    let mut expected = http::Request::builder()
        .method("POST")
        .uri(&uri)
        .body(())
        .expect("a request");
    instructions.apply_to_request_http1x(&mut expected);
    expected
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        == Some(given)
}

/// `20261204T144343Z` as a time.
fn amz_date(text: &str) -> Option<SystemTime> {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let at = time::PrimitiveDateTime::parse(text, &format).ok()?;
    Some(at.assume_utc().into())
}
