//! One call to an AWS service's JSON protocol (EventBridge `PutEvents`, SQS `SendMessageBatch`),
//! signed by `aws-sigv4` and sent with `reqwest`: a service SDK crate would cost a function's
//! 6 MiB budget more than this file.

use std::time::{Duration, SystemTime};

use aws_config::SdkConfig;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use serde_json::Value;

/// Why a call got no answer; the text names the step, never a credential or a signature.
#[derive(Debug, thiserror::Error)]
pub enum AwsJsonError {
    #[error("no AWS credentials: {0}")]
    Credentials(String),
    #[error("{0}")]
    Failed(String),
}

pub struct AwsJson {
    http: reqwest::Client,
    endpoint: String,
    host: String,
    region: String,
    /// The signing name (`events`, `sqs`).
    service: &'static str,
    /// `application/x-amz-json-1.0` or `-1.1`, as the service speaks.
    content_type: &'static str,
    credentials: SharedCredentialsProvider,
    /// What its calls address, as the IAM check reads it (`crate::aws_calls`).
    resource: &'static str,
}

impl AwsJson {
    /// A caller of `service` at `endpoint` (default: the region's), each call within `timeout`.
    pub fn new(
        config: &SdkConfig,
        service: &'static str,
        content_type: &'static str,
        endpoint: Option<String>,
        timeout: Duration,
    ) -> Result<AwsJson, AwsJsonError> {
        let region = config
            .region()
            .map(|r| r.to_string())
            .ok_or_else(|| AwsJsonError::Credentials("no AWS region".into()))?;
        let credentials = config
            .credentials_provider()
            .ok_or_else(|| AwsJsonError::Credentials("no credentials provider".into()))?;
        let endpoint =
            endpoint.unwrap_or_else(|| format!("https://{service}.{region}.amazonaws.com"));
        let endpoint = endpoint.trim_end_matches('/').to_string() + "/";
        let host = reqwest::Url::parse(&endpoint)
            .ok()
            .and_then(|u| {
                u.host_str()
                    .map(|h| u.port().map_or(h.to_string(), |p| format!("{h}:{p}")))
            })
            .ok_or_else(|| AwsJsonError::Failed("the endpoint has no host".into()))?;
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| AwsJsonError::Failed(format!("HTTP client: {e}")))?;
        Ok(AwsJson {
            http,
            endpoint,
            host,
            region,
            service,
            content_type,
            credentials,
            resource: service,
        })
    }

    /// This caller addresses what `resource` names (`env:SNAPWAKE_DUE_QUEUE_URL`).
    pub fn addressing(mut self, resource: &'static str) -> AwsJson {
        self.resource = resource;
        self
    }

    /// POST `body` as `target` (`AWSEvents.PutEvents`): the status and JSON (`Null` if none).
    pub async fn call(&self, target: &str, body: Vec<u8>) -> Result<(u16, Value), AwsJsonError> {
        if crate::aws_calls::recording_on() {
            crate::aws_calls::record(crate::aws_calls::AwsCall {
                function: None,
                service: self.service.to_string(),
                operation: target
                    .split_once('.')
                    .map_or(target, |(_, op)| op)
                    .to_string(),
                resource: self.resource.to_string(),
                leading_key: None,
            });
        }
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| AwsJsonError::Credentials(e.to_string()))?;
        let identity: Identity = credentials.into();
        let headers = [
            ("host", self.host.as_str()),
            ("content-type", self.content_type),
            ("x-amz-target", target),
        ];
        let signing = |e: String| AwsJsonError::Failed(format!("signing: {e}"));
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(self.service)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| signing(e.to_string()))?
            .into();
        let signable = SignableRequest::new(
            "POST",
            &self.endpoint,
            headers.iter().copied(),
            SignableBody::Bytes(&body),
        )
        .map_err(|e| signing(e.to_string()))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| signing(e.to_string()))?
            .into_parts();
        let mut request = http::Request::builder()
            .method("POST")
            .uri(&self.endpoint)
            .body(body)
            .map_err(|e| AwsJsonError::Failed(format!("request: {e}")))?;
        for (name, value) in headers {
            if let Ok(v) = http::HeaderValue::from_str(value) {
                if let Ok(n) = http::HeaderName::from_bytes(name.as_bytes()) {
                    request.headers_mut().insert(n, v);
                }
            }
        }
        instructions.apply_to_request_http1x(&mut request);
        let request = reqwest::Request::try_from(request)
            .map_err(|e| AwsJsonError::Failed(format!("request: {e}")))?;
        let response = self
            .http
            .execute(request)
            .await
            .map_err(|e| AwsJsonError::Failed(format!("{target}: {}", e.without_url())))?;
        let status = response.status().as_u16();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        Ok((status, answer))
    }
}
