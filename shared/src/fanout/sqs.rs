//! The deployed fan-out queue: SQS `SendMessageBatch` (via [`crate::aws_json`]), ten messages a
//! call. Entries failed without blaming the sender are sent again, twice at most.

use std::time::Duration;

use aws_config::SdkConfig;
use serde_json::{json, Value};

use super::message::{DueOccurrence, FanoutError};
use crate::aws_json::AwsJson;

/// SQS's most entries in one `SendMessageBatch`.
const BATCH: usize = 10;
/// SQS's longest `DelaySeconds`.
const MAX_DELAY_S: u64 = 900;
/// Rounds of sending what SQS failed without blaming the sender.
const ROUNDS: usize = 3;
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

pub struct SqsQueue {
    sqs: AwsJson,
    url: String,
}

impl SqsQueue {
    /// The queue at `url`; `AWS_ENDPOINT_URL_SQS` overrides the region's endpoint.
    pub fn new(config: &SdkConfig, url: impl Into<String>) -> Result<SqsQueue, FanoutError> {
        let endpoint = std::env::var("AWS_ENDPOINT_URL_SQS")
            .ok()
            .filter(|e| !e.is_empty());
        SqsQueue::with_endpoint(config, url, endpoint)
    }

    /// The queue at `url`, called at `endpoint` (`None`: SQS's of the region).
    pub fn with_endpoint(
        config: &SdkConfig,
        url: impl Into<String>,
        endpoint: Option<String>,
    ) -> Result<SqsQueue, FanoutError> {
        let sqs = AwsJson::new(
            config,
            "sqs",
            "application/x-amz-json-1.0",
            endpoint,
            CALL_TIMEOUT,
        )
        .map_err(|e| FanoutError::Unreachable(e.to_string()))?
        // The one queue snapwake sends to: the fan-out queue its configuration names.
        .addressing("env:SNAPWAKE_DUE_QUEUE_URL");
        Ok(SqsQueue {
            sqs,
            url: url.into(),
        })
    }

    pub async fn send(&self, due: &[DueOccurrence]) -> Result<(), FanoutError> {
        for batch in due.chunks(BATCH) {
            let mut left: Vec<&DueOccurrence> = batch.iter().collect();
            let mut reason = String::new();
            for _ in 0..ROUNDS {
                let body = batch_body(&self.url, &left)?;
                let (status, answer) = self
                    .sqs
                    .call("AmazonSQS.SendMessageBatch", body)
                    .await
                    .map_err(|e| FanoutError::Unreachable(e.to_string()))?;
                if !(200..300).contains(&status) {
                    let code = answer["__type"].as_str().unwrap_or("no error code");
                    return Err(FanoutError::Unreachable(format!(
                        "SendMessageBatch answered {status}: {code}"
                    )));
                }
                let failed = failed_entries(&answer);
                if let Some((code, _)) = failed.iter().find(|(_, sender)| *sender) {
                    return Err(FanoutError::Refused {
                        refused: failed.len(),
                        sent: left.len(),
                        reason: code.to_string(),
                    });
                }
                reason = failed
                    .first()
                    .map(|(code, _)| code.clone())
                    .unwrap_or_default();
                let again: Vec<&DueOccurrence> = failed_ids(&answer)
                    .into_iter()
                    .filter_map(|id| left.get(id).copied())
                    .collect();
                if again.is_empty() {
                    break;
                }
                left = again;
            }
            if !reason.is_empty() {
                return Err(FanoutError::Refused {
                    refused: left.len(),
                    sent: batch.len(),
                    reason,
                });
            }
        }
        Ok(())
    }
}

/// The `SendMessageBatch` body for `due` (entry ids are their positions).
fn batch_body(url: &str, due: &[&DueOccurrence]) -> Result<Vec<u8>, FanoutError> {
    let entries = due
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let body = serde_json::to_string(d).map_err(|e| FanoutError::Refused {
                refused: 1,
                sent: due.len(),
                reason: e.to_string(),
            })?;
            let mut entry = json!({
                "Id": i.to_string(),
                "MessageBody": body,
            });
            // Whole seconds, rounded up: a follow-up is never delivered before its time.
            let delay_s = (d.delay().as_millis() as u64)
                .div_ceil(1000)
                .min(MAX_DELAY_S);
            if delay_s > 0 {
                entry["DelaySeconds"] = json!(delay_s);
            }
            Ok(entry)
        })
        .collect::<Result<Vec<Value>, FanoutError>>()?;
    serde_json::to_vec(&json!({"QueueUrl": url, "Entries": entries})).map_err(|e| {
        FanoutError::Refused {
            refused: due.len(),
            sent: due.len(),
            reason: e.to_string(),
        }
    })
}

/// The failed entries' codes, and whether SQS blamed the sender.
fn failed_entries(answer: &Value) -> Vec<(String, bool)> {
    answer["Failed"]
        .as_array()
        .map(|failed| {
            failed
                .iter()
                .map(|f| {
                    (
                        f["Code"].as_str().unwrap_or("unknown").to_string(),
                        f["SenderFault"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn failed_ids(answer: &Value) -> Vec<usize> {
    answer["Failed"]
        .as_array()
        .map(|failed| {
            failed
                .iter()
                .filter_map(|f| f["Id"].as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AgentKey, Kind};
    use crate::schedule::DueLead;

    #[test]
    fn a_batch_carries_each_message_and_delays_a_follow_up() {
        let due = DueOccurrence {
            agent: AgentKey::new(Kind::Hermes, "h-1"),
            tick_ms: 120_000,
            wake_ms: Some(150_000),
            sleep_ms: None,
            version: 3,
            lead: DueLead {
                now_ms: 65_000,
                alone_ms: Some(65_000),
            },
            not_before_ms: None,
            idle: false,
        };
        let follow_up = due.follow_up(Duration::from_millis(2_500));
        let body = batch_body("https://sqs.example/1/due", &[&due, &follow_up]).unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["QueueUrl"], "https://sqs.example/1/due");
        let entries = body["Entries"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1]["Id"], "1");
        assert!(entries[0].get("DelaySeconds").is_none(), "due now");
        assert_eq!(entries[1]["DelaySeconds"], 3, "rounded up");
        assert!(
            entries[0].get("MessageGroupId").is_none(),
            "a standard queue"
        );
        let sent: DueOccurrence =
            serde_json::from_str(entries[0]["MessageBody"].as_str().unwrap()).unwrap();
        assert_eq!(sent, due);
    }

    #[test]
    fn failed_entries_are_read_with_whom_sqs_blamed() {
        let answer = json!({
            "Successful": [{"Id": "0"}],
            "Failed": [
                {"Id": "1", "Code": "InternalError", "SenderFault": false},
                {"Id": "2", "Code": "InvalidParameterValue", "SenderFault": true}
            ]
        });
        assert_eq!(failed_ids(&answer), vec![1, 2]);
        assert_eq!(
            failed_entries(&answer),
            vec![
                ("InternalError".to_string(), false),
                ("InvalidParameterValue".to_string(), true)
            ]
        );
        assert!(failed_entries(&json!({"Successful": []})).is_empty());
    }
}
