//! The DynamoDB adapter: the store port over one table (docs/table.md), in production and, via
//! `AWS_ENDPOINT_URL`, on DynamoDB Local. Every write is one `UpdateItem` (or `PutItem` for the
//! registry) whose `ConditionExpression` is the port's [`Condition`], DynamoDB itself computing
//! `version + 1` and `fence + 1`. Attribute names always go through `#placeholders` (`state`,
//! `name`... are reserved words). TTL deletes lazily (days late) and DynamoDB Local never does,
//! so `expires_at < now` is checked on every read and inside every condition.
//!
//! AgentKit budget items in DynamoDB (docs/table.md, "The AgentKit budget"): `next_at`, the
//! earliest untaken slot (epoch ms), and the last slowdown. A slot is taken by one `UpdateItem`
//! whose condition is the check, so concurrent callers each get their own slot with no read; an
//! idle bucket is restarted at now by a second conditional write, which one of two racing wins.

use super::port::{self, OwnerCursor};
use super::{
    AgentPage, AgentStore, Changes, Condition, Document, DocumentKey, OwnerPage, StoreError,
};
use crate::ambient::now_s;
use crate::domain::{AgentKey, AgentRecord, Kind, ToolRegistry};
use crate::store::port::{budget_pk, BUDGET_SK};
use crate::store::{BudgetStore, Reserved, Slowdown};
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use item::{
    attr, condition_expression, document_from_item, get_n, get_s, live_document, live_record, n,
    record_from_item, registry_from_item, s, take_live, update_expression, Expr, Item,
};
pub use sdk::{https_client, sdk_defaults, timeouts};
use std::collections::HashMap;

mod batch;
mod pages;
mod item;
mod schedule;
mod sdk;
mod usage;
pub mod stream;

/// The store over one DynamoDB table. Cheap to clone (the SDK client is reference-counted).
#[derive(Clone, Debug)]
pub struct DynamoStore {
    pub(super) client: Client,
    pub(super) table: String,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoStore {
            client,
            table: table.into(),
        }
    }

    /// A store over `table` with a client from `config` (load it once per cold start). With
    /// `SNAPWAKE_AWS_CALLS` set, the client records each call (`crate::aws_calls`).
    pub fn from_conf(config: &aws_config::SdkConfig, table: impl Into<String>) -> Self {
        if !crate::aws_calls::recording_on() {
            return Self::new(Client::new(config), table);
        }
        let config = aws_sdk_dynamodb::config::Builder::from(config)
            .interceptor(crate::aws_calls::CallRecorder)
            .build();
        Self::new(Client::from_conf(config), table)
    }

    /// A store over `table` with the SDK's default chain (`AWS_ENDPOINT_URL`: DynamoDB Local).
    /// Timeouts are explicit because the SDK has none per attempt and API Gateway cuts at 30 s:
    /// 3 s an attempt, 8 s with retries; a timed-out write is ambiguous (`Unavailable`).
    pub async fn from_env(table: impl Into<String>) -> Self {
        Self::from_loader(sdk_defaults(), table).await
    }

    /// [`DynamoStore::from_env`] from a given loader (the tests' wire-fault proxy, say).
    pub async fn from_loader(loader: aws_config::ConfigLoader, table: impl Into<String>) -> Self {
        let config = loader.timeout_config(timeouts()).load().await;
        Self::from_conf(&config, table)
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}

/// Any SDK failure but a failed condition: for a write, it may have been applied.
pub(super) fn unavailable<E, R>(op: &str, err: &SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Unavailable(format!("{op}: {}", DisplayErrorContext(err)))
}

const MIN_QUERY_LIMIT: usize = 25;

impl DynamoStore {
    fn agent_key_attrs(key: &AgentKey) -> Item {
        HashMap::from([
            (attr::PK.to_string(), s(&port::agent_pk(key))),
            (attr::SK.to_string(), s(port::AGENT_SK)),
        ])
    }

    fn registry_key_attrs() -> Item {
        HashMap::from([
            (attr::PK.to_string(), s(port::REGISTRY_PK)),
            (attr::SK.to_string(), s(port::REGISTRY_SK)),
        ])
    }
}

impl AgentStore for DynamoStore {
    async fn get(&self, key: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
        // Consistent: a caller deciding whether to acquire must see the latest write.
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::agent_key_attrs(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("GetItem", &e))?;
        match out.item() {
            Some(item) => live_record(item, now_s()),
            None => Ok(None),
        }
    }

    async fn get_many(&self, keys: &[AgentKey]) -> Result<Vec<AgentRecord>, StoreError> {
        self.batch_get(keys).await
    }

    async fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> Result<AgentRecord, StoreError> {
        let now = now_s();
        let creates = matches!(condition, Condition::Absent | Condition::Version(0));
        let mut expr = Expr::default();
        let condition_expression = condition_expression(&mut expr, condition, now);
        update_expression(&mut expr, key, creates, changes);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::agent_key_attrs(key)))
            .update_expression(expr.update_expression())
            .condition_expression(condition_expression)
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            // The record as written: the caller learns its new version and fence without a read.
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => {
                let item = out.attributes().ok_or_else(|| {
                    StoreError::Corrupt("UpdateItem answered no attributes".into())
                })?;
                record_from_item(item)
            }
            Err(err) => {
                if let Some(UpdateItemError::ConditionalCheckFailedException(e)) =
                    err.as_service_error()
                {
                    // No item, or an expired one: the record is absent.
                    let current = match e.item() {
                        Some(item) => live_record(item, now)?,
                        None => None,
                    };
                    return Err(StoreError::ConditionFailed {
                        current: current.map(Box::new),
                    });
                }
                Err(unavailable("UpdateItem", &err))
            }
        }
    }

    async fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<OwnerPage, StoreError> {
        self.owner_page(owner_key, limit, cursor).await
    }

    async fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> Result<AgentPage, StoreError> {
        self.agent_page(kind, limit, after).await
    }

    async fn get_registry(&self) -> Result<Option<ToolRegistry>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::registry_key_attrs()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("GetItem", &e))?;
        out.item().map(registry_from_item).transpose()
    }

    async fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> Result<ToolRegistry, StoreError> {
        let mut written = registry.clone();
        written.version = expected_version + 1;
        let json = serde_json::to_string(&written)
            .map_err(|e| StoreError::Corrupt(format!("registry: {e}")))?;
        let mut item = Self::registry_key_attrs();
        item.insert(attr::REGISTRY.to_string(), s(&json));
        item.insert(attr::VERSION.to_string(), n(written.version));
        // Deploy runs on a schedule and by hand: two deploys racing must not both write, and
        // the loser must not overwrite the winner's Tool ids with its older view.
        let request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let request = if expected_version == 0 {
            request
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", attr::PK)
        } else {
            request
                .condition_expression("#version = :expected")
                .expression_attribute_names("#version", attr::VERSION)
                .expression_attribute_values(":expected", n(expected_version))
        };
        match request.send().await {
            Ok(_) => Ok(written),
            Err(err) => {
                if let Some(PutItemError::ConditionalCheckFailedException(e)) =
                    err.as_service_error()
                {
                    let current = e.item().map(registry_from_item).transpose()?;
                    return Err(StoreError::RegistryConflict {
                        current: current.map(Box::new),
                    });
                }
                Err(unavailable("PutItem", &err))
            }
        }
    }

    async fn get_document(&self, key: DocumentKey<'_>) -> Result<Option<Document>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.pk))
            .key(attr::SK, s(key.sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("GetItem", &e))?;
        live_document(out.item(), now_s())
    }

    async fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &serde_json::Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> Result<Document, StoreError> {
        let json = serde_json::to_string(value)
            .map_err(|e| StoreError::Corrupt(format!("document: {e}")))?;
        let now = now_s();
        // DynamoDB increments the version, so an expired document's carries on: none is reused.
        let mut update =
            "SET #doc = :doc, #version = if_not_exists(#version, :zero) + :one".to_string();
        update.push_str(if expires_at.is_some() {
            ", #expires_at = :expires_at"
        } else {
            " REMOVE #expires_at"
        });
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.pk))
            .key(attr::SK, s(key.sk))
            .update_expression(update)
            .expression_attribute_names("#doc", attr::DOC)
            .expression_attribute_names("#version", attr::VERSION)
            .expression_attribute_names("#expires_at", attr::EXPIRES_AT)
            .expression_attribute_values(":doc", s(&json))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Some(t) = expires_at {
            request = request.expression_attribute_values(":expires_at", n(t));
        }
        request = if expected_version == 0 {
            // Absent, or present but expired (TTL deletion is lazy).
            request
                .condition_expression("attribute_not_exists(#pk) OR #expires_at < :now")
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_values(":now", n(now))
        } else {
            request
                .condition_expression(
                    "#version = :expected AND (attribute_not_exists(#expires_at) OR #expires_at >= :now)",
                )
                .expression_attribute_values(":expected", n(expected_version))
                .expression_attribute_values(":now", n(now))
        };
        match request.send().await {
            Ok(out) => out
                .attributes()
                .map(document_from_item)
                .transpose()?
                .ok_or_else(|| StoreError::Corrupt("UpdateItem answered no attributes".into())),
            Err(err) => {
                if let Some(UpdateItemError::ConditionalCheckFailedException(e)) =
                    err.as_service_error()
                {
                    return Err(StoreError::DocumentConflict {
                        current: live_document(e.item(), now)?.map(Box::new),
                    });
                }
                Err(unavailable("UpdateItem", &err))
            }
        }
    }
}

const NEXT_AT: &str = "next_at";
const SLOW: &str = "slow";
const SLOW_SINCE: &str = "slow_since";

/// Rounds of take-or-restart: a bucket can flip between idle and busy under us; after these
/// the caller is told it is full for now, never held in a loop.
const ROUNDS: usize = 4;

fn key_attrs(bucket: &str) -> Item {
    HashMap::from([
        (attr::PK.to_string(), s(&budget_pk(bucket))),
        (attr::SK.to_string(), s(BUDGET_SK)),
    ])
}

fn slowdown_of(item: &Item) -> Result<Option<Slowdown>, StoreError> {
    Ok(match (get_n(item, SLOW)?, get_n(item, SLOW_SINCE)?) {
        (Some(factor_permille), Some(since_ms)) => Some(Slowdown {
            factor_permille,
            since_ms,
        }),
        _ => None,
    })
}

impl BudgetStore for DynamoStore {
    async fn reserve(
        &self,
        bucket: &str,
        now_ms: u64,
        interval_ms: u64,
        latest_ms: u64,
    ) -> Result<Reserved, StoreError> {
        let mut slowdown = None;
        for _ in 0..ROUNDS {
            // Busy: take the next slot if it lies between now and the caller's latest.
            let taken = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key_attrs(bucket)))
                .update_expression("SET #next = #next + :interval")
                .condition_expression("#next >= :now AND #next <= :latest")
                .expression_attribute_names("#next", NEXT_AT)
                .expression_attribute_values(":interval", n(interval_ms))
                .expression_attribute_values(":now", n(now_ms))
                .expression_attribute_values(":latest", n(latest_ms))
                .return_values(ReturnValue::AllNew)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            let old = match taken {
                Ok(out) => {
                    let item = out.attributes().cloned().unwrap_or_default();
                    let next: u64 = get_n(&item, NEXT_AT)?.unwrap_or(now_ms + interval_ms);
                    return Ok(Reserved::At {
                        at_ms: next.saturating_sub(interval_ms),
                        slowdown: slowdown_of(&item)?,
                    });
                }
                Err(err) => match err.as_service_error() {
                    Some(UpdateItemError::ConditionalCheckFailedException(e)) => {
                        e.item().cloned().unwrap_or_default()
                    }
                    _ => return Err(unavailable("UpdateItem", &err)),
                },
            };
            slowdown = slowdown_of(&old)?;
            let next: Option<u64> = get_n(&old, NEXT_AT)?;
            if let Some(next) = next.filter(|next| *next > latest_ms) {
                return Ok(Reserved::Full {
                    free_at_ms: next,
                    slowdown,
                });
            }
            if now_ms > latest_ms {
                return Ok(Reserved::Full {
                    free_at_ms: now_ms,
                    slowdown,
                });
            }
            // Idle: restart the bucket at now, unless someone else just did.
            let restarted = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key_attrs(bucket)))
                .update_expression("SET #next = :after")
                .condition_expression("attribute_not_exists(#next) OR #next < :now")
                .expression_attribute_names("#next", NEXT_AT)
                .expression_attribute_values(":after", n(now_ms + interval_ms))
                .expression_attribute_values(":now", n(now_ms))
                .send()
                .await;
            match restarted {
                Ok(_) => {
                    return Ok(Reserved::At {
                        at_ms: now_ms,
                        slowdown,
                    })
                }
                Err(SdkError::ServiceError(e))
                    if e.err().is_conditional_check_failed_exception() =>
                {
                    continue
                }
                Err(e) => return Err(unavailable("UpdateItem", &e)),
            }
        }
        Ok(Reserved::Full {
            free_at_ms: now_ms + interval_ms,
            slowdown,
        })
    }

    async fn slow_down(
        &self,
        bucket: &str,
        slowdown: Slowdown,
        min_gap_ms: u64,
    ) -> Result<(), StoreError> {
        let written = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key_attrs(bucket)))
            .update_expression("SET #slow = :slow, #since = :since")
            .condition_expression("attribute_not_exists(#since) OR #since < :gap")
            .set_expression_attribute_names(Some(HashMap::from([
                ("#slow".to_string(), SLOW.to_string()),
                ("#since".to_string(), SLOW_SINCE.to_string()),
            ])))
            .expression_attribute_values(":slow", n(slowdown.factor_permille))
            .expression_attribute_values(":since", n(slowdown.since_ms))
            .expression_attribute_values(":gap", n(slowdown.since_ms.saturating_sub(min_gap_ms)))
            .send()
            .await;
        match written {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(e)) if e.err().is_conditional_check_failed_exception() => {
                Ok(())
            }
            Err(e) => Err(unavailable("UpdateItem", &e)),
        }
    }
}
