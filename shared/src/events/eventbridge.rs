//! Amazon EventBridge `PutEvents` (the JSON 1.1 protocol), signed with SigV4 by the AWS SDK's
//! own `aws-sigv4` and sent with the `reqwest` client the AgentKit client uses: no EventBridge
//! SDK crate, whose client would cost the 6 MiB budget more than this file.
//!
//! One entry per call (`source: snapwake`); an answer with `FailedEntryCount > 0` is a failure
//! (EventBridge answers 200 with the entry failed, e.g. throttled), retried by the caller.

use std::time::{Duration, SystemTime};

use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use serde_json::{json, Value};

use super::{EventError, EventSink};
use crate::domain::StateEvent;

/// The `source` of every event snapwake publishes.
pub const SOURCE: &str = "snapwake";
/// One call's limit: part of [`super::announcing::PUBLISH_BUDGET`].
const CALL_TIMEOUT: Duration = Duration::from_millis(1000);

pub struct EventBridge {
    http: reqwest::Client,
    endpoint: String,
    region: String,
    bus: String,
    credentials: SharedCredentialsProvider,
}

impl EventBridge {
    /// A publisher to `bus` with `config`'s region and credentials. The endpoint is
    /// EventBridge's of the region, or `AWS_ENDPOINT_URL_EVENTS` when set (tests, a VPC
    /// endpoint); never the generic `AWS_ENDPOINT_URL`, which the tests point at DynamoDB.
    pub fn new(config: &SdkConfig, bus: impl Into<String>) -> Result<EventBridge, EventError> {
        let endpoint = std::env::var("AWS_ENDPOINT_URL_EVENTS")
            .ok()
            .filter(|e| !e.is_empty());
        EventBridge::with_endpoint(config, bus, endpoint)
    }

    /// A publisher to `bus` at `endpoint` (`None`: EventBridge's of the region).
    pub fn with_endpoint(
        config: &SdkConfig,
        bus: impl Into<String>,
        endpoint: Option<String>,
    ) -> Result<EventBridge, EventError> {
        let region = config
            .region()
            .map(|r| r.to_string())
            .ok_or_else(|| EventError::Credentials("no AWS region".into()))?;
        let credentials = config
            .credentials_provider()
            .ok_or_else(|| EventError::Credentials("no credentials provider".into()))?;
        let endpoint = endpoint.unwrap_or_else(|| format!("https://events.{region}.amazonaws.com"));
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| EventError::Failed(format!("HTTP client: {e}")))?;
        Ok(EventBridge {
            http,
            endpoint: endpoint.trim_end_matches('/').to_string() + "/",
            region,
            bus: bus.into(),
            credentials,
        })
    }

    /// The `PutEvents` body of `event`.
    pub fn body(&self, event: &StateEvent) -> Result<Vec<u8>, EventError> {
        let detail = serde_json::to_string(&event.detail)
            .map_err(|e| EventError::Failed(format!("detail: {e}")))?;
        serde_json::to_vec(&json!({"Entries": [{
            "Source": SOURCE,
            "DetailType": event.detail_type,
            "Detail": detail,
            "EventBusName": self.bus,
        }]}))
        .map_err(|e| EventError::Failed(format!("body: {e}")))
    }
}

impl EventSink for EventBridge {
    async fn publish(&self, event: &StateEvent) -> Result<(), EventError> {
        let body = self.body(event)?;
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| EventError::Credentials(e.to_string()))?;
        let identity: Identity = credentials.into();
        let host = reqwest::Url::parse(&self.endpoint)
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| u.port().map_or(h.to_string(), |p| format!("{h}:{p}")))
            })
            .ok_or_else(|| EventError::Failed("the endpoint has no host".into()))?;
        let headers = [
            ("host", host.as_str()),
            ("content-type", "application/x-amz-json-1.1"),
            ("x-amz-target", "AWSEvents.PutEvents"),
        ];
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("events")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| EventError::Failed(format!("signing: {e}")))?
            .into();
        let signable = SignableRequest::new(
            "POST",
            &self.endpoint,
            headers.iter().copied(),
            SignableBody::Bytes(&body),
        )
        .map_err(|e| EventError::Failed(format!("signing: {e}")))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| EventError::Failed(format!("signing: {e}")))?
            .into_parts();
        let mut request = http::Request::builder()
            .method("POST")
            .uri(&self.endpoint)
            .body(body)
            .map_err(|e| EventError::Failed(format!("request: {e}")))?;
        for (name, value) in headers {
            if let Ok(v) = http::HeaderValue::from_str(value) {
                if let Ok(n) = http::HeaderName::from_bytes(name.as_bytes()) {
                    request.headers_mut().insert(n, v);
                }
            }
        }
        instructions.apply_to_request_http1x(&mut request);
        let request = reqwest::Request::try_from(request)
            .map_err(|e| EventError::Failed(format!("request: {e}")))?;
        let response = self
            .http
            .execute(request)
            .await
            .map_err(|e| EventError::Failed(format!("PutEvents: {}", e.without_url())))?;
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            let code = answer["__type"].as_str().unwrap_or("no error code");
            return Err(EventError::Failed(format!(
                "PutEvents answered {status}: {code}"
            )));
        }
        match answer["FailedEntryCount"].as_u64() {
            Some(0) => Ok(()),
            Some(_) => {
                let code = answer["Entries"][0]["ErrorCode"]
                    .as_str()
                    .unwrap_or("unknown");
                Err(EventError::Failed(format!(
                    "PutEvents failed the entry: {code}"
                )))
            }
            None => Err(EventError::Failed(
                "PutEvents answered no FailedEntryCount".into(),
            )),
        }
    }
}
