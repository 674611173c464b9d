//! Snapwake's table (docs/table.md): its items' attribute names, and creating it for tests and
//! local runs. Production's comes from infra (`infra/template.yaml`, which also turns on
//! point-in-time recovery).

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, IndexStatus, KeySchemaElement, KeyType,
    Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TableDescription, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};
use aws_sdk_dynamodb::Client;

use super::port::{DUE_INDEX, OWNER_INDEX};
use super::StoreError;

/// Attribute names of the agent record item.
pub mod attr {
    pub const PK: &str = "pk";
    pub const SK: &str = "sk";
    pub const GSI1PK: &str = "gsi1pk";
    pub const GSI1SK: &str = "gsi1sk";
    pub const OWNER: &str = "owner";
    pub const OWNER_KEY: &str = "owner_key";
    pub const DISPLAY_NAME: &str = "display_name";
    pub const CREATED_BY: &str = "created_by";
    pub const RETENTION: &str = "retention";
    pub const TOOL_ID: &str = "tool_id";
    pub const REGION: &str = "region";
    pub const CREATED_AT: &str = "created_at";
    pub const STATE: &str = "state";
    pub const HOLDER: &str = "holder";
    pub const FENCE: &str = "fence";
    pub const LEASE_UNTIL_MS: &str = "lease_until_ms";
    pub const SNAPSHOT_ID: &str = "snapshot_id";
    pub const SESSION_ID: &str = "session_id";
    pub const SESSION_EXPIRE_AT: &str = "session_expire_at";
    pub const SESSION_CREATED_AT: &str = "session_created_at";
    pub const VERIFIED_AT_MS: &str = "verified_at_ms";
    /// Epoch ms (N).
    pub const RESUME_SENT_AT: &str = "resume_sent_at";
    /// Epoch ms (N).
    pub const CREATE_SENT_AT: &str = "create_sent_at";
    pub const POLL_UNTIL_MS: &str = "poll_until_ms";
    pub const AWAITED_SINCE_MS: &str = "awaited_since_ms";
    pub const POLLER: &str = "poller";
    /// The snapshot summaries, as JSON (S).
    pub const SNAPSHOTS: &str = "snapshots";
    /// The schedule summary, as JSON (S).
    pub const SCHEDULE: &str = "schedule";
    pub const ERROR: &str = "error";
    pub const VERSION: &str = "version";
    pub const UPDATED_AT: &str = "updated_at";
    pub const EXPIRES_AT: &str = "expires_at";
    /// The state change the last write was (`Announce::as_str`), absent when none: the stream
    /// mapping's filter lets only the versions that carry it through.
    pub const ANNOUNCE: &str = "announce";
    /// What set that change off (`Trigger::as_str`).
    pub const TRIGGER: &str = "trigger";
    /// What set off the change an acquire started (`Trigger::as_str`).
    pub const STARTED_BY: &str = "started_by";
    pub const REGISTRY: &str = "registry";
    pub const DOC: &str = "doc";
    /// A schedule's sparse index keys (`by_due`), present only while it has something due.
    pub const DUE_PK: &str = "due_pk";
    pub const DUE_AT: &str = "due_at";
    /// The owner's idle time in minutes (N); absent: the deployment's.
    pub const IDLE_MINUTES: &str = "idle_minutes";
    /// The usage mark (docs/usage.md): how the agent rests since its last announced change
    /// (`Resting::as_str`), since when (N, epoch seconds), what woke it, when the reference
    /// Studio's session began (N).
    pub const USAGE_STATE: &str = "usage_state";
    pub const USAGE_SINCE: &str = "usage_since";
    pub const USAGE_BY: &str = "usage_by";
    pub const REFERENCE_FROM: &str = "reference_from";
    /// A usage row's applied changes (SS): a change is added to a row once.
    pub const USAGE_CHANGES: &str = "changes";
    pub const KIND: &str = "kind";
    pub const AGENT_ID: &str = "agent_id";

    /// What a create must clear when it replaces an expired item: all but the two counters.
    pub const CLEARED_ON_CREATE: [&str; 30] = [
        OWNER,
        OWNER_KEY,
        DISPLAY_NAME,
        CREATED_BY,
        RETENTION,
        TOOL_ID,
        REGION,
        CREATED_AT,
        STATE,
        HOLDER,
        LEASE_UNTIL_MS,
        SNAPSHOT_ID,
        SESSION_ID,
        SESSION_EXPIRE_AT,
        SESSION_CREATED_AT,
        STARTED_BY,
        VERIFIED_AT_MS,
        RESUME_SENT_AT,
        CREATE_SENT_AT,
        POLL_UNTIL_MS,
        POLLER,
        AWAITED_SINCE_MS,
        SNAPSHOTS,
        SCHEDULE,
        IDLE_MINUTES,
        DUE_PK,
        DUE_AT,
        ERROR,
        EXPIRES_AT,
        GSI1PK,
    ];
}

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
