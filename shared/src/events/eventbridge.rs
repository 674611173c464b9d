//! Amazon EventBridge `PutEvents` (JSON 1.1), a signed call of [`crate::aws_json`]. At most ten
//! entries a call; each succeeds or fails on its own (a 200 with `FailedEntryCount` and each
//! failed entry's `ErrorCode`), retried by the caller.

use std::time::Duration;

use aws_config::SdkConfig;
use serde_json::json;

use super::sink::{EventError, EventSink};
use crate::aws_json::{AwsJson, AwsJsonError};
use crate::domain::StateEvent;

pub const SOURCE: &str = "snapwake";
/// One call's limit: part of [`super::relay::PUBLISH_BUDGET`].
const CALL_TIMEOUT: Duration = Duration::from_millis(1000);

pub struct EventBridge {
    events: AwsJson,
    bus: String,
}

impl From<AwsJsonError> for EventError {
    fn from(e: AwsJsonError) -> Self {
        match e {
            AwsJsonError::Credentials(e) => EventError::Credentials(e),
            AwsJsonError::Failed(e) => EventError::Failed(e),
        }
    }
}

impl EventBridge {
    /// A publisher to `bus`, at `AWS_ENDPOINT_URL_EVENTS` if set (tests, a VPC endpoint); never
    /// the generic `AWS_ENDPOINT_URL`, which the tests point at DynamoDB.
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
        Ok(EventBridge {
            events: AwsJson::new(
                config,
                "events",
                "application/x-amz-json-1.1",
                endpoint,
                CALL_TIMEOUT,
            )?
            // The one bus snapwake publishes to: the state-change bus its configuration names.
            .addressing("env:SNAPWAKE_EVENT_BUS"),
            bus: bus.into(),
        })
    }

    pub fn body(&self, events: &[StateEvent]) -> Result<Vec<u8>, EventError> {
        let entries = events
            .iter()
            .map(|event| {
                let detail = serde_json::to_string(&event.detail)
                    .map_err(|e| EventError::Failed(format!("detail: {e}")))?;
                Ok(json!({
                    "Source": SOURCE,
                    "DetailType": event.detail_type,
                    "Detail": detail,
                    "EventBusName": self.bus,
                }))
            })
            .collect::<Result<Vec<_>, EventError>>()?;
        serde_json::to_vec(&json!({ "Entries": entries }))
            .map_err(|e| EventError::Failed(format!("body: {e}")))
    }

    /// One `PutEvents` call of `events`: each one's outcome.
    async fn put(&self, events: &[StateEvent]) -> Result<Vec<Result<(), EventError>>, EventError> {
        let body = self.body(events)?;
        let (status, answer) = self.events.call("AWSEvents.PutEvents", body).await?;
        if !(200..300).contains(&status) {
            let code = answer["__type"].as_str().unwrap_or("no error code");
            return Err(EventError::Failed(format!(
                "PutEvents answered {status}: {code}"
            )));
        }
        if answer["FailedEntryCount"].as_u64().is_none() {
            return Err(EventError::Failed(
                "PutEvents answered no FailedEntryCount".into(),
            ));
        }
        let entries = answer["Entries"].as_array().cloned().unwrap_or_default();
        Ok((0..events.len())
            .map(
                |i| match entries.get(i).and_then(|e| e["ErrorCode"].as_str()) {
                    None if entries.get(i).is_some() => Ok(()),
                    None => Err(EventError::Failed(
                        "PutEvents answered no entry for it".into(),
                    )),
                    Some(code) => Err(EventError::Failed(format!(
                        "PutEvents failed the entry: {code}"
                    ))),
                },
            )
            .collect())
    }
}

impl EventSink for EventBridge {
    async fn publish(&self, event: &StateEvent) -> Result<(), EventError> {
        self.publish_all(std::slice::from_ref(event))
            .await
            .into_iter()
            .next()
            .unwrap_or_else(|| Err(EventError::Failed("no answer".into())))
    }

    async fn publish_all(&self, events: &[StateEvent]) -> Vec<Result<(), EventError>> {
        match self.put(events).await {
            Ok(each) => each,
            Err(e) => events.iter().map(|_| Err(e.clone())).collect(),
        }
    }
}
