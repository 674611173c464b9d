//! A fresh table per test on DynamoDB Local (Amazon's own engine).

use snapwake::store::dynamo::DynamoStore;
use snapwake::store::table::create_table;

pub const REGION: &str = "cn-beijing";

/// A fresh table on DynamoDB Local. Without `AWS_ENDPOINT_URL` this fails loudly: the
/// DynamoDB-backed tests must not pass by not running (scripts/test.sh starts it).
pub async fn dynamo_store(test: &str) -> DynamoStore {
    assert!(
        std::env::var_os("AWS_ENDPOINT_URL").is_some(),
        "AWS_ENDPOINT_URL is not set: start DynamoDB Local with \
         `eval \"$(scripts/start-dynamodb-local.sh)\"` or run scripts/test.sh"
    );
    let table = format!(
        "{}-{}",
        test.replace('_', "-"),
        uuid::Uuid::new_v4().simple()
    );
    dynamo_table(&table, true).await
}

/// The store over `table`, creating it when asked.
pub async fn dynamo_table(table: &str, create: bool) -> DynamoStore {
    let store = DynamoStore::from_env(table).await;
    if create {
        create_table(store.client(), table)
            .await
            .unwrap_or_else(|e| panic!("cannot create table {table}: {e}"));
    }
    store
}
