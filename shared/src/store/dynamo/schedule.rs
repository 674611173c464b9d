//! Schedule items in DynamoDB (docs/table.md, "Schedules"): `pk = SCHEDULE#<kind>#<agent_id>`,
//! `sk = SCHEDULE`, the schedule as JSON in `doc`, and — only while something is due — the
//! sparse index keys `due_pk = DUE`, `due_at` (epoch ms), so the tick's query of `by_due`
//! reads the due schedules and nothing else.
//!
//! One partition key for the whole index: a tick asks "everything due by now" in one ordered
//! query. Its write rate is the schedules' (a few writes per occurrence), far under a
//! partition's 1,000 writes a second; shard `due_pk` if that ever changes.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::expression::{n, s};
use super::item::{attr, get_n, get_s, Item};
use super::{unavailable, DynamoStore};
use crate::domain::{AgentKey, ScheduleRecord};
use crate::store::keys::{self, DUE_INDEX, DUE_PK, SCHEDULE_SK};
use crate::store::{DueCursor, DuePage, ScheduleStore, StoreError};
use crate::timestamp;

fn key_attrs(key: &AgentKey) -> Item {
    HashMap::from([
        (attr::PK.to_string(), s(&keys::schedule_pk(key))),
        (attr::SK.to_string(), s(SCHEDULE_SK)),
    ])
}

fn from_item(item: &Item) -> Result<ScheduleRecord, StoreError> {
    let pk = get_s(item, attr::PK)?.unwrap_or_default();
    let key = keys::parse_schedule_pk(&pk)?;
    let json = get_s(item, attr::DOC)?
        .ok_or_else(|| StoreError::Corrupt(format!("schedule {pk} without doc")))?;
    let mut record: ScheduleRecord = serde_json::from_str(&json)
        .map_err(|e| StoreError::Corrupt(format!("schedule {pk}: {e}")))?;
    record.key = Some(key);
    record.version = get_n(item, attr::VERSION)?.unwrap_or(0);
    record.updated_at = get_s(item, attr::UPDATED_AT)?;
    Ok(record)
}

impl ScheduleStore for DynamoStore {
    async fn get_schedule(&self, key: &AgentKey) -> Result<Option<ScheduleRecord>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key_attrs(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("GetItem", &e))?;
        out.item().map(from_item).transpose()
    }

    async fn put_schedule(
        &self,
        record: &ScheduleRecord,
        expected_version: u64,
    ) -> Result<ScheduleRecord, StoreError> {
        let key = record
            .key
            .as_ref()
            .ok_or_else(|| StoreError::Corrupt("a schedule write names no agent".into()))?;
        let json = serde_json::to_string(record)
            .map_err(|e| StoreError::Corrupt(format!("schedule: {e}")))?;
        // One UpdateItem: the version is DynamoDB's own `+ 1`, the index keys set or removed
        // with the document, so the index never shows a due time the item does not have.
        let mut update = "SET #doc = :doc, #updated_at = :updated_at, \
             #version = if_not_exists(#version, :zero) + :one"
            .to_string();
        let due = record.due_at_ms();
        update.push_str(if due.is_some() {
            ", #due_pk = :due_pk, #due_at = :due_at"
        } else {
            " REMOVE #due_pk, #due_at"
        });
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key_attrs(key)))
            .update_expression(update)
            .expression_attribute_names("#doc", attr::DOC)
            .expression_attribute_names("#updated_at", attr::UPDATED_AT)
            .expression_attribute_names("#version", attr::VERSION)
            .expression_attribute_names("#due_pk", attr::DUE_PK)
            .expression_attribute_names("#due_at", attr::DUE_AT)
            .expression_attribute_values(":doc", s(&json))
            .expression_attribute_values(":updated_at", s(&timestamp::now()))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Some(due) = due {
            request = request
                .expression_attribute_values(":due_pk", s(DUE_PK))
                .expression_attribute_values(":due_at", n(due));
        }
        request = if expected_version == 0 {
            request
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", attr::PK)
        } else {
            request
                .condition_expression("#version = :expected")
                .expression_attribute_values(":expected", n(expected_version))
        };
        match request.send().await {
            Ok(out) => out
                .attributes()
                .map(from_item)
                .transpose()?
                .ok_or_else(|| StoreError::Corrupt("UpdateItem answered no item".into())),
            Err(e) => {
                if let Some(failed) = e
                    .as_service_error()
                    .filter(|se| se.is_conditional_check_failed_exception())
                {
                    let current = match failed {
                        aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => {
                            c.item().map(from_item).transpose()?.map(Box::new)
                        }
                        _ => None,
                    };
                    return Err(StoreError::ScheduleConflict { current });
                }
                Err(unavailable("UpdateItem", &e))
            }
        }
    }

    async fn delete_schedule(&self, key: &AgentKey) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key_attrs(key)))
            .send()
            .await
            .map_err(|e| unavailable("DeleteItem", &e))?;
        Ok(())
    }

    async fn due_schedules(
        &self,
        until_ms: u64,
        limit: u32,
        after: Option<&DueCursor>,
    ) -> Result<DuePage, StoreError> {
        let start = after.map(|c| {
            let mut k = key_attrs(&c.key);
            k.insert(attr::DUE_PK.to_string(), s(DUE_PK));
            k.insert(attr::DUE_AT.to_string(), n(c.due_at_ms));
            k
        });
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(DUE_INDEX)
            .key_condition_expression("#due_pk = :due_pk AND #due_at <= :until")
            .expression_attribute_names("#due_pk", attr::DUE_PK)
            .expression_attribute_names("#due_at", attr::DUE_AT)
            .expression_attribute_values(":due_pk", s(DUE_PK))
            .expression_attribute_values(":until", n(until_ms))
            .limit(i32::try_from(limit.max(1)).unwrap_or(i32::MAX))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| unavailable("Query", &e))?;
        let records = out
            .items()
            .iter()
            .map(from_item)
            .collect::<Result<Vec<_>, _>>()?;
        let next = match out.last_evaluated_key() {
            Some(lek) if !lek.is_empty() => {
                let pk = get_s(lek, attr::PK)?.unwrap_or_default();
                Some(DueCursor {
                    key: keys::parse_schedule_pk(&pk)?,
                    due_at_ms: get_n(lek, attr::DUE_AT)?.unwrap_or(0),
                })
            }
            _ => None,
        };
        Ok(DuePage { records, next })
    }
}
