//! The table's DynamoDB stream (`NEW_AND_OLD_IMAGES`) read as [`RecordChange`]s, delivered by a
//! Lambda event source mapping or polled by [`TableStream`] (`snapwake serve` on DynamoDB
//! Local). Only agent records count; the table's other items are skipped.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};

use super::item::{attr, get_s, record_from_item, Item};
use crate::aws_json::AwsJson;
use crate::store::{port, RecordChange, StoreError};

/// The changes to agent records among `records`, in order. A record whose image cannot be
/// read is logged and skipped: holding the stream back for it would hold every later change.
pub fn changes_of(records: &[Value]) -> Vec<RecordChange> {
    records
        .iter()
        .filter_map(|r| match change_of(r) {
            Ok(change) => change,
            Err(e) => {
                tracing::warn!(error = %e, "a stream record could not be read; skipped");
                None
            }
        })
        .collect()
}

fn change_of(record: &Value) -> Result<Option<RecordChange>, StoreError> {
    let dynamodb = &record["dynamodb"];
    let sequence = dynamodb["SequenceNumber"]
        .as_str()
        .ok_or_else(|| StoreError::Corrupt("a stream record without SequenceNumber".into()))?;
    let image = |name: &str| -> Result<Option<Item>, StoreError> {
        match dynamodb.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => item(v).map(Some),
        }
    };
    let (old, new) = (image("OldImage")?, image("NewImage")?);
    let Some(any) = new.as_ref().or(old.as_ref()) else {
        return Ok(None);
    };
    if !is_agent_record(any) {
        return Ok(None);
    }
    Ok(Some(RecordChange {
        sequence: sequence.to_string(),
        old: old.as_ref().map(record_from_item).transpose()?,
        new: new.as_ref().map(record_from_item).transpose()?,
    }))
}

fn is_agent_record(item: &Item) -> bool {
    matches!(get_s(item, attr::SK), Ok(Some(sk)) if sk == port::AGENT_SK)
        && matches!(get_s(item, attr::PK), Ok(Some(pk)) if pk.starts_with("AGENT#"))
}

/// An item in DynamoDB's JSON (`{"pk": {"S": "…"}, "version": {"N": "3"}}`).
fn item(value: &Value) -> Result<Item, StoreError> {
    let map = value
        .as_object()
        .ok_or_else(|| StoreError::Corrupt("an image that is not an object".into()))?;
    map.iter()
        .map(|(k, v)| Ok((k.clone(), attribute(v)?)))
        .collect()
}

fn attribute(value: &Value) -> Result<AttributeValue, StoreError> {
    let corrupt = || StoreError::Corrupt(format!("an attribute DynamoDB would not write: {value}"));
    let object = value
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(corrupt)?;
    let (tag, v) = object.iter().next().ok_or_else(corrupt)?;
    let text = || v.as_str().map(str::to_string).ok_or_else(corrupt);
    let texts = || -> Result<Vec<String>, StoreError> {
        v.as_array()
            .ok_or_else(corrupt)?
            .iter()
            .map(|s| s.as_str().map(str::to_string).ok_or_else(corrupt))
            .collect()
    };
    let blob = |s: &str| -> Result<Blob, StoreError> {
        data_encoding::BASE64
            .decode(s.as_bytes())
            .map(Blob::new)
            .map_err(|_| corrupt())
    };
    Ok(match tag.as_str() {
        "S" => AttributeValue::S(text()?),
        "N" => AttributeValue::N(text()?),
        "BOOL" => AttributeValue::Bool(v.as_bool().ok_or_else(corrupt)?),
        "NULL" => AttributeValue::Null(true),
        "B" => AttributeValue::B(blob(&text()?)?),
        "SS" => AttributeValue::Ss(texts()?),
        "NS" => AttributeValue::Ns(texts()?),
        "BS" => AttributeValue::Bs(texts()?.iter().map(|s| blob(s)).collect::<Result<_, _>>()?),
        "L" => AttributeValue::L(
            v.as_array()
                .ok_or_else(corrupt)?
                .iter()
                .map(attribute)
                .collect::<Result<_, _>>()?,
        ),
        "M" => AttributeValue::M(item(v)?),
        _ => return Err(corrupt()),
    })
}

/// Where a [`TableStream`] starts reading the shards open when it opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartAt {
    /// The oldest record the stream keeps (a test that reads what its table saw).
    Oldest,
    /// What is written from now on (`snapwake serve`).
    Now,
}

/// A poller of the table's stream, shard by shard, a parent's records before its children's
/// (a key's changes stay in order across a shard split).
pub struct TableStream {
    streams: AwsJson,
    arn: String,
    /// Open iterators by shard; `None`: the shard is read to its end.
    shards: BTreeMap<String, Option<String>>,
    read_to: HashMap<String, String>,
    parents: HashMap<String, String>,
    start_at: StartAt,
    opened: bool,
}

const CALL_TIMEOUT: Duration = Duration::from_secs(5);

impl TableStream {
    /// The stream of the table `store` writes to, at `endpoint`, signed with `sdk`'s credentials.
    pub async fn open(
        store: &super::DynamoStore,
        sdk: &aws_config::SdkConfig,
        endpoint: String,
        start_at: StartAt,
    ) -> Result<TableStream, StoreError> {
        let table = store
            .client()
            .describe_table()
            .table_name(store.table())
            .send()
            .await
            .map_err(|e| StoreError::Unavailable(format!("DescribeTable: {e}")))?;
        let arn = table
            .table()
            .and_then(|t| t.latest_stream_arn())
            .ok_or_else(|| {
                StoreError::Unavailable(format!("table {} has no stream", store.table()))
            })?
            .to_string();
        let streams = AwsJson::new(
            sdk,
            "dynamodb",
            "application/x-amz-json-1.0",
            Some(endpoint),
            CALL_TIMEOUT,
        )
        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
        Ok(TableStream {
            streams,
            arn,
            shards: BTreeMap::new(),
            read_to: HashMap::new(),
            parents: HashMap::new(),
            start_at,
            opened: false,
        })
    }

    async fn call(&self, action: &str, body: Value) -> Result<Value, String> {
        let target = format!("DynamoDBStreams_20120810.{action}");
        let (status, answer) = self
            .streams
            .call(&target, body.to_string().into_bytes())
            .await
            .map_err(|e| e.to_string())?;
        if status != 200 {
            return Err(format!("{action}: {status} {}", answer["__type"]));
        }
        Ok(answer)
    }

    /// Learn the shards that appeared since the last look, each with an iterator.
    async fn discover(&mut self) -> Result<(), String> {
        let mut start: Option<String> = None;
        loop {
            let mut body = json!({"StreamArn": self.arn});
            if let Some(s) = &start {
                body["ExclusiveStartShardId"] = json!(s);
            }
            let answer = self.call("DescribeStream", body).await?;
            let description = &answer["StreamDescription"];
            for shard in description["Shards"].as_array().into_iter().flatten() {
                let Some(id) = shard["ShardId"].as_str() else {
                    continue;
                };
                if self.shards.contains_key(id) {
                    continue;
                }
                if let Some(parent) = shard["ParentShardId"].as_str() {
                    self.parents.insert(id.to_string(), parent.to_string());
                }
                // Shards open at the start begin where asked; any later one from its beginning.
                let kind = match (self.opened, self.start_at) {
                    (false, StartAt::Now) => "LATEST",
                    _ => "TRIM_HORIZON",
                };
                let answer = self
                    .call(
                        "GetShardIterator",
                        json!({"StreamArn": self.arn, "ShardId": id, "ShardIteratorType": kind}),
                    )
                    .await?;
                let iterator = answer["ShardIterator"].as_str().map(str::to_string);
                self.shards.insert(id.to_string(), iterator);
            }
            match description["LastEvaluatedShardId"].as_str() {
                Some(last) => start = Some(last.to_string()),
                None => break,
            }
        }
        self.opened = true;
        Ok(())
    }

    async fn records(&self, iterator: &str) -> Result<Value, String> {
        self.call(
            "GetRecords",
            json!({"ShardIterator": iterator, "Limit": 1000}),
        )
        .await
    }

    /// A new iterator of `shard` just after the last record read (from its start: none yet).
    async fn iterator_after(&self, shard: &str) -> Result<String, String> {
        let body = match self.read_to.get(shard) {
            Some(seq) => json!({"StreamArn": self.arn, "ShardId": shard,
                "ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": seq}),
            None => json!({"StreamArn": self.arn, "ShardId": shard,
                "ShardIteratorType": "TRIM_HORIZON"}),
        };
        let answer = self.call("GetShardIterator", body).await?;
        answer["ShardIterator"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("no iterator for shard {shard}"))
    }

    /// The changes written since the last call, oldest first within each shard.
    pub async fn next(&mut self) -> Result<Vec<RecordChange>, String> {
        self.discover().await?;
        let mut out = Vec::new();
        let ids: Vec<String> = self.shards.keys().cloned().collect();
        for id in ids {
            // A child waits for its parent to be read to its end.
            let parent_open = self
                .parents
                .get(&id)
                .and_then(|p| self.shards.get(p))
                .is_some_and(Option::is_some);
            let Some(Some(iterator)) = self.shards.get(&id).cloned() else {
                continue;
            };
            if parent_open {
                continue;
            }
            let answer = match self.records(&iterator).await {
                Ok(answer) => answer,
                // An iterator that expired (15 minutes unused), or one DynamoDB Local trimmed
                // once other tables' writes moved its sequence on: taken again after the last read.
                Err(e) if e.contains("TrimmedDataAccess") || e.contains("ExpiredIterator") => {
                    let iterator = self.iterator_after(&id).await?;
                    self.records(&iterator).await?
                }
                Err(e) => return Err(e),
            };
            let records = answer["Records"].as_array().cloned().unwrap_or_default();
            if let Some(last) = records
                .last()
                .and_then(|r| r["dynamodb"]["SequenceNumber"].as_str())
            {
                self.read_to.insert(id.clone(), last.to_string());
            }
            out.extend(changes_of(&records));
            let next = answer["NextShardIterator"].as_str().map(str::to_string);
            self.shards.insert(id, next);
        }
        Ok(out)
    }
}

impl crate::store::ChangeSource for TableStream {
    async fn next(&mut self) -> Result<Vec<RecordChange>, String> {
        TableStream::next(self).await
    }
}
