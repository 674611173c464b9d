//! Credentials from the AWS Parameters and Secrets Lambda Extension, against a fake extension
//! on loopback that checks the token header like the real one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use snapwake::agentkit::credentials::from_extension;
use snapwake::agentkit::AgentKitError;

struct Fake {
    secret_string: String,
    /// Answer 400 ("not ready") this many times first, as the extension does while starting.
    not_ready: AtomicUsize,
}

async fn handler(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Result<Json<serde_json::Value>, StatusCode> {
    if headers
        .get("X-Aws-Parameters-Secrets-Token")
        .and_then(|v| v.to_str().ok())
        != Some("lambda-session-token")
    {
        return Err(StatusCode::UNAUTHORIZED);
    }
    if fake
        .not_ready
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return Err(StatusCode::BAD_REQUEST);
    }
    if q.get("secretId").map(String::as_str) != Some("snapwake/agentkit") {
        return Err(StatusCode::NOT_FOUND);
    }
    Ok(Json(serde_json::json!({
        "ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:snapwake/agentkit-AbCdEf",
        "Name": "snapwake/agentkit",
        "SecretString": fake.secret_string,
        "VersionId": "v1",
    })))
}

async fn serve(secret_string: &str, not_ready: usize) -> String {
    let fake = Arc::new(Fake {
        secret_string: secret_string.to_string(),
        not_ready: AtomicUsize::new(not_ready),
    });
    let app = Router::new()
        .route("/secretsmanager/get", get(handler))
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/secretsmanager/get")
}

#[tokio::test]
async fn reads_env_style_keys_after_the_extension_warms_up() {
    let url = serve(
        r#"{"VOLCENGINE_ACCESS_KEY":"AKfromSecret","VOLCENGINE_SECRET_KEY":"canary-secret-value","VOLCENGINE_SESSION_TOKEN":"sts"}"#,
        2,
    )
    .await;
    let http = reqwest::Client::new();
    let creds = from_extension(&http, &url, "snapwake/agentkit", "lambda-session-token")
        .await
        .unwrap();
    assert_eq!(creds.access_key_id, "AKfromSecret");
    assert_eq!(creds.secret_access_key(), "canary-secret-value");
    assert_eq!(creds.session_token(), Some("sts"));
}

#[tokio::test]
async fn reads_snake_case_keys() {
    let url = serve(r#"{"access_key_id":"AK2","secret_access_key":"SK2"}"#, 0).await;
    let creds = from_extension(
        &reqwest::Client::new(),
        &url,
        "snapwake/agentkit",
        "lambda-session-token",
    )
    .await
    .unwrap();
    assert_eq!(creds.access_key_id, "AK2");
    assert_eq!(creds.session_token(), None);
}

#[tokio::test]
async fn failures_are_typed_and_never_echo_the_secret() {
    let url = serve(
        r#"{"VOLCENGINE_ACCESS_KEY":"AK","oops":"canary-secret-value"}"#,
        0,
    )
    .await;
    let http = reqwest::Client::new();
    let err = from_extension(&http, &url, "snapwake/agentkit", "lambda-session-token")
        .await
        .unwrap_err();
    assert!(matches!(err, AgentKitError::Credentials(_)));
    assert!(!err.to_string().contains("canary-secret-value"));

    // A wrong token is refused by the extension on every attempt.
    let err = from_extension(&http, &url, "snapwake/agentkit", "wrong")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("HTTP 401"), "{err}");

    let err = from_extension(&http, "http://127.0.0.1:1/secretsmanager/get", "x", "t")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("did not answer"), "{err}");
}
