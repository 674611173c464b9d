//! Which function makes each AWS call and, when asked, a record of every call: the evidence the
//! IAM check (`tests/tests/iam.rs`) holds against each function's policy (docs/security.md).
//! With `SNAPWAKE_AWS_CALLS=<dir>` set, the DynamoDB client and the SQS and EventBridge callers
//! write each distinct call once to `<dir>/calls-<pid>.jsonl`, on the wire: what is recorded is
//! what AWS would authorise, whichever store method or retry sent it.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The variable that turns recording on: the directory the recordings go to.
pub const RECORD_VAR: &str = "SNAPWAKE_AWS_CALLS";

/// One AWS call as IAM sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AwsCall {
    /// The template's logical id of the function that made it; none outside every function.
    pub function: Option<String>,
    /// `dynamodb`, `sqs`, `events`.
    pub service: String,
    /// The API operation (`UpdateItem`); a transaction is recorded item by item, as IAM sees it.
    pub operation: String,
    /// What it addresses: `table` or `index/<name>` for DynamoDB; for the others, the
    /// environment variable the function was configured with (`env:SNAPWAKE_DUE_QUEUE_URL`).
    pub resource: String,
    /// The partition key the call leads with (`dynamodb:LeadingKeys`), when it has one.
    pub leading_key: Option<String>,
}

/// Where the calls of this process go, once opened; `None` when nobody records.
struct Recording {
    file: Mutex<File>,
    seen: Mutex<HashSet<AwsCall>>,
}

fn recording() -> Option<&'static Recording> {
    static RECORDING: OnceLock<Option<Recording>> = OnceLock::new();
    RECORDING
        .get_or_init(|| {
            let dir = PathBuf::from(std::env::var_os(RECORD_VAR)?);
            std::fs::create_dir_all(&dir).ok()?;
            let path = dir.join(format!("calls-{}.jsonl", std::process::id()));
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()?;
            Some(Recording {
                file: Mutex::new(file),
                seen: Mutex::new(HashSet::new()),
            })
        })
        .as_ref()
}

pub fn recording_on() -> bool {
    recording().is_some()
}

/// Record `call` once. Each line is written whole, so a process killed mid-test leaves the rest.
pub fn record(mut call: AwsCall) {
    let Some(recording) = recording() else {
        return;
    };
    if call.function.is_none() {
        call.function = crate::invocation::function().map(str::to_string);
    }
    let fresh = recording
        .seen
        .lock()
        .map(|mut seen| seen.insert(call.clone()))
        .unwrap_or(false);
    if !fresh {
        return;
    }
    if let (Ok(mut line), Ok(mut file)) = (serde_json::to_vec(&call), recording.file.lock()) {
        line.push(b'\n');
        let _ = file.write_all(&line);
    }
}

// The DynamoDB client's recorder: an SDK interceptor that reads each request on the wire and
// records the calls IAM authorises in it, a transaction's item by item as its own operation.
/// The table's partition key attribute (`store::table`).
const PARTITION_KEY: &str = "pk";

/// Records every request of the client it is added to (by `DynamoStore::from_conf`).
#[derive(Debug, Default)]
pub struct CallRecorder;

impl Intercept for CallRecorder {
    fn name(&self) -> &'static str {
        "snapwake::aws_calls::CallRecorder"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request();
        let Some(operation) = request
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.split_once('.').map(|(_, op)| op.to_string()))
        else {
            return Ok(());
        };
        let body = request
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            .unwrap_or(Value::Null);
        for call in calls_of(&operation, &body) {
            record(call);
        }
        Ok(())
    }
}

/// The calls IAM authorises in one request of `operation` with `body`.
pub fn calls_of(operation: &str, body: &Value) -> Vec<AwsCall> {
    let call = |operation: &str, resource: String, leading_key: Option<String>| AwsCall {
        function: None,
        service: "dynamodb".into(),
        operation: operation.into(),
        resource,
        leading_key,
    };
    match operation {
        "BatchGetItem" | "BatchWriteItem" => body["RequestItems"]
            .as_object()
            .into_iter()
            .flat_map(|tables| tables.values())
            .flat_map(|requests| batch_keys(operation, requests))
            .map(|key| call(operation, "table".into(), key))
            .collect(),
        "TransactWriteItems" | "TransactGetItems" => body["TransactItems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| item.as_object()?.iter().next())
            .map(|(kind, item)| {
                let operation = match kind.as_str() {
                    "ConditionCheck" => "ConditionCheckItem".to_string(),
                    other => format!("{other}Item"),
                };
                call(&operation, "table".into(), item_key(item))
            })
            .collect(),
        "Query" => vec![call(operation, resource_of(body), query_key(body))],
        "Scan" => vec![call(operation, resource_of(body), None)],
        _ => vec![call(operation, resource_of(body), item_key(body))],
    }
}

fn resource_of(body: &Value) -> String {
    body["IndexName"]
        .as_str()
        .map_or_else(|| "table".to_string(), |index| format!("index/{index}"))
}

/// The partition key of an item request: its `Key`, or the `Item` a put writes.
fn item_key(body: &Value) -> Option<String> {
    let item = body.get("Key").or_else(|| body.get("Item"))?;
    item[PARTITION_KEY]["S"].as_str().map(str::to_string)
}

/// Each key of one table's part of a batch (`Keys` of a get; each put's or delete's item).
fn batch_keys(operation: &str, requests: &Value) -> Vec<Option<String>> {
    if operation == "BatchGetItem" {
        return requests["Keys"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|key| key[PARTITION_KEY]["S"].as_str().map(str::to_string))
            .collect();
    }
    requests
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| item_key(&r["PutRequest"]).or_else(|| item_key(&r["DeleteRequest"])))
        .collect()
}

/// The partition key value a query's key condition names: its first `name = :value`.
fn query_key(body: &Value) -> Option<String> {
    let condition = body["KeyConditionExpression"].as_str()?;
    let first = condition.split(" AND ").next()?.split(" and ").next()?;
    let (_, placeholder) = first.split_once('=')?;
    body["ExpressionAttributeValues"][placeholder.trim()]["S"]
        .as_str()
        .map(str::to_string)
}

#[cfg(test)]
mod dynamodb_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_transaction_is_each_items_operation() {
        let body = json!({"TransactItems": [
            {"Update": {"TableName": "t", "Key": {"pk": {"S": "SCHEDULE#a"}, "sk": {"S": "x"}}}},
            {"Delete": {"TableName": "t", "Key": {"pk": {"S": "AGENT#a"}}}},
            {"ConditionCheck": {"TableName": "t", "Key": {"pk": {"S": "OWNER#b"}}}},
        ]});
        let calls = calls_of("TransactWriteItems", &body);
        let seen: Vec<_> = calls
            .iter()
            .map(|c| (c.operation.as_str(), c.leading_key.as_deref()))
            .collect();
        assert_eq!(
            seen,
            [
                ("UpdateItem", Some("SCHEDULE#a")),
                ("DeleteItem", Some("AGENT#a")),
                ("ConditionCheckItem", Some("OWNER#b")),
            ]
        );
    }

    #[test]
    fn a_query_leads_with_its_key_conditions_first_value() {
        let body = json!({
            "TableName": "t", "IndexName": "by_owner",
            "KeyConditionExpression": "#o = :o AND begins_with(#s, :p)",
            "ExpressionAttributeValues": {":o": {"S": "OWNER#alice"}, ":p": {"S": "x"}},
        });
        let calls = calls_of("Query", &body);
        assert_eq!(calls[0].resource, "index/by_owner");
        assert_eq!(calls[0].leading_key.as_deref(), Some("OWNER#alice"));
    }

    #[test]
    fn a_batch_get_is_one_call_per_key_and_an_item_call_leads_with_its_key() {
        let body = json!({"RequestItems": {"t": {"Keys": [
            {"pk": {"S": "A#1"}}, {"pk": {"S": "A#2"}}
        ]}}});
        assert_eq!(calls_of("BatchGetItem", &body).len(), 2);
        let put = json!({"TableName": "t", "Item": {"pk": {"S": "REGISTRY"}}});
        let call = &calls_of("PutItem", &put)[0];
        assert_eq!(
            (call.resource.as_str(), call.leading_key.as_deref()),
            ("table", Some("REGISTRY"))
        );
        assert_eq!(
            calls_of("Scan", &json!({"TableName": "t"}))[0].leading_key,
            None
        );
    }
}
