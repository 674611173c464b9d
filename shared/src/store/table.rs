//! Creating snapwake's table (docs/table.md) for tests and local runs. Production's comes from
//! infra (`infra/template.yaml`, which also turns on point-in-time recovery).

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, IndexStatus, KeySchemaElement, KeyType,
    Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TableDescription, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};
use aws_sdk_dynamodb::Client;

use super::keys::{DUE_INDEX, OWNER_INDEX};
use super::StoreError;

const ACTIVE_WITHIN: Duration = Duration::from_secs(120);

fn failed(op: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("{op}: {e}"))
}

fn key(name: &str, key_type: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .map_err(|e| failed("KeySchemaElement", e))
}

fn string_attr(name: &str) -> Result<AttributeDefinition, StoreError> {
    attr_of(name, ScalarAttributeType::S)
}

fn number_attr(name: &str) -> Result<AttributeDefinition, StoreError> {
    attr_of(name, ScalarAttributeType::N)
}

fn attr_of(name: &str, kind: ScalarAttributeType) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
        .map_err(|e| failed("AttributeDefinition", e))
}

/// Create table `name` (keys, indexes, on-demand billing, TTL, a new-and-old-images stream) and
/// wait until ACTIVE. Idempotent: TTL and the stream are turned on only if off.
pub async fn create_table(client: &Client, name: &str) -> Result<(), StoreError> {
    create(client, name, true).await
}

/// [`create_table`] without the stream, for tests that read no events: DynamoDB Local keeps
/// every table's stream records in one store, and its writes slow down as they pile up.
pub async fn create_table_without_stream(client: &Client, name: &str) -> Result<(), StoreError> {
    create(client, name, false).await
}

async fn create(client: &Client, name: &str, streamed: bool) -> Result<(), StoreError> {
    // ALL: a listing answers from the index alone, with no GetItem per agent.
    let index = all_projected(OWNER_INDEX, "gsi1pk", "gsi1sk")?;
    // Sparse: only schedule items with something due carry `due_pk`/`due_at`.
    let due = all_projected(DUE_INDEX, "due_pk", "due_at")?;
    let created = client
        .create_table()
        .table_name(name)
        .attribute_definitions(string_attr("pk")?)
        .attribute_definitions(string_attr("sk")?)
        .attribute_definitions(string_attr("gsi1pk")?)
        .attribute_definitions(string_attr("gsi1sk")?)
        .attribute_definitions(string_attr("due_pk")?)
        .attribute_definitions(number_attr("due_at")?)
        .key_schema(key("pk", KeyType::Hash)?)
        .key_schema(key("sk", KeyType::Range)?)
        .global_secondary_indexes(index)
        .global_secondary_indexes(due)
        .billing_mode(BillingMode::PayPerRequest)
        .set_stream_specification(streamed.then(stream).transpose()?)
        .send()
        .await;
    if let Err(err) = created {
        if err.code() != Some("ResourceInUseException") {
            return Err(failed("CreateTable", DisplayErrorContext(&err)));
        }
    }

    let described = wait_active(client, name).await?;

    // A table made before the events came from its stream (a kept local engine's) gains one.
    let streaming = described
        .stream_specification()
        .is_some_and(|s| s.stream_enabled());
    if streamed && !streaming {
        client
            .update_table()
            .table_name(name)
            .stream_specification(stream()?)
            .send()
            .await
            .map_err(|e| failed("UpdateTable", DisplayErrorContext(&e)))?;
        wait_active(client, name).await?;
    }

    let ttl = client
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(|e| failed("DescribeTimeToLive", DisplayErrorContext(&e)))?;
    let on = ttl.time_to_live_description().is_some_and(|d| {
        matches!(
            d.time_to_live_status(),
            Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
        )
    });
    if !on {
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name("expires_at")
                    .build()
                    .map_err(|e| failed("TimeToLiveSpecification", e))?,
            )
            .send()
            .await
            .map_err(|e| failed("UpdateTimeToLive", DisplayErrorContext(&e)))?;
    }
    Ok(())
}

fn all_projected(name: &str, hash: &str, range: &str) -> Result<GlobalSecondaryIndex, StoreError> {
    GlobalSecondaryIndex::builder()
        .index_name(name)
        .key_schema(key(hash, KeyType::Hash)?)
        .key_schema(key(range, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )
        .build()
        .map_err(|e| failed("GlobalSecondaryIndex", e))
}

fn stream() -> Result<StreamSpecification, StoreError> {
    StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(StreamViewType::NewAndOldImages)
        .build()
        .map_err(|e| failed("StreamSpecification", e))
}

async fn wait_active(client: &Client, name: &str) -> Result<TableDescription, StoreError> {
    let started = Instant::now();
    loop {
        let out = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .map_err(|e| failed("DescribeTable", DisplayErrorContext(&e)))?;
        let ready = out.table().filter(|t| {
            t.table_status() == Some(&TableStatus::Active)
                && t.global_secondary_indexes()
                    .iter()
                    .all(|i| i.index_status() == Some(&IndexStatus::Active))
        });
        if let Some(table) = ready {
            return Ok(table.clone());
        }
        if started.elapsed() > ACTIVE_WITHIN {
            return Err(failed(
                "DescribeTable",
                format!("table {name} not ACTIVE within {ACTIVE_WITHIN:?}"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
