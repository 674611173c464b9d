//! DynamoDB only: failures that are not a condition (an unreachable store, a missing table), and
//! `create_table` run twice.

use crate::support::*;

// ---------------------------------------------------------------------------------------------
// DynamoDB only: failures that are not a condition

/// A store that cannot be reached answers `Unavailable`, never a verdict on the condition.
#[tokio::test]
async fn dynamodb_unreachable_is_unavailable() {
    let config = sdk_defaults()
        .endpoint_url("http://127.0.0.1:9")
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "local", "local", None, None, "test",
        ))
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .load()
        .await;
    let store = DynamoStore::from_conf(&config, "nowhere");
    assert!(matches!(
        store.get(&key("x")).await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store
            .update(&key("x"), &Condition::Absent, &acquire("h"))
            .await,
        Err(StoreError::Unavailable(_))
    ));
}

/// A missing table (a misconfigured `SNAPWAKE_TABLE`) is `Unavailable` too.
#[tokio::test]
async fn dynamodb_missing_table_is_unavailable() {
    let Some(store) = dynamo_store("missing_table").await else {
        return;
    };
    let other = DynamoStore::new(store.client().clone(), "no-such-table");
    assert!(matches!(
        other.get(&key("x")).await,
        Err(StoreError::Unavailable(_))
    ));
}

/// `create_table` is idempotent.
#[tokio::test]
async fn dynamodb_create_table_twice() {
    let Some(store) = dynamo_store("create_twice").await else {
        return;
    };
    create_table(store.client(), store.table()).await.unwrap();
    assert_eq!(store.get(&key("x")).await.unwrap(), None);
}
