//! Where the local server's state-change events come from, as deployed: the table's own
//! changes (docs/events.md). On DynamoDB (Local, or a real table) its stream; in memory, the
//! memory store's change feed (set up in `serve`).

use snapwake::store::dynamo::stream::{StartAt, TableStream};
use snapwake::store::dynamo::{sdk_defaults, timeouts, DynamoStore};

use crate::error::CliError;

/// The store over `table` and a reader of its stream from now on. Against a local engine
/// (`AWS_ENDPOINT_URL`) the table is made if it is not there yet; production's comes from
/// infra, and this never makes one against AWS itself.
pub async fn dynamo(table: &str) -> Result<(DynamoStore, TableStream), CliError> {
    let sdk = sdk_defaults().timeout_config(timeouts()).load().await;
    let store = DynamoStore::from_conf(&sdk, table);
    let local = std::env::var("AWS_ENDPOINT_URL").ok();
    if local.is_some() {
        snapwake::store::table::create_table(store.client(), table)
            .await
            .map_err(|e| CliError::Usage(format!("cannot create table {table}: {e}")))?;
    }
    let region = sdk.region().map_or("us-east-1".into(), |r| r.to_string());
    let endpoint =
        local.unwrap_or_else(|| format!("https://streams.dynamodb.{region}.amazonaws.com"));
    let stream = TableStream::open(&store, &sdk, endpoint, StartAt::Now)
        .await
        .map_err(|e| CliError::Usage(format!("cannot read the table's stream: {e}")))?;
    Ok((store, stream))
}
