//! The DynamoDB client's recorder: an SDK interceptor that reads each request on the wire and
//! records the calls IAM authorises in it, a transaction's item by item as its own operation.

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use serde_json::Value;

use super::{record, AwsCall};

/// The table's partition key attribute (`store::table`).
const PARTITION_KEY: &str = "pk";

/// Records every request of the client it is added to (by `DynamoStore::from_conf`).
#[derive(Debug, Default)]
pub struct CallRecorder;

impl Intercept for CallRecorder {
    fn name(&self) -> &'static str {
        "snapwake::aws_calls::dynamodb::CallRecorder"
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
mod tests {
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
