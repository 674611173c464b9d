//! Schedule items in DynamoDB (docs/table.md, "Schedules"): `pk = SCHEDULE#<kind>#<agent_id>`,
//! `sk = SCHEDULE`, the schedule as JSON in `doc`, and — only while something is due — the
//! sparse index keys `due_pk = DUE`, `due_at` (epoch ms), so the tick's query of `by_due`
//! reads the due schedules and nothing else.
//!
//! One partition key for the whole index: a tick asks "everything due by now" in one ordered
//! query. Its write rate is the schedules' (a few writes per occurrence), far under a
//! partition's 1,000 writes a second; shard `due_pk` if that ever changes.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    Delete, Put, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::expression::{condition_expression, n, s, update_expression, Expr};
use super::item::{attr, get_n, get_s, Item};
use super::{unavailable, DynamoStore};
use crate::domain::{AgentKey, AgentRecord, ScheduleRecord, WakeState};
use crate::store::keys::{self, DUE_INDEX, DUE_PK, SCHEDULE_SK};
use crate::store::{Changes, Condition, DueCursor, DuePage, ScheduleStore, StoreError};
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

    async fn set_schedule(
        &self,
        agent: &AgentRecord,
        schedule: Option<&ScheduleRecord>,
        expected_version: u64,
    ) -> Result<Option<ScheduleRecord>, StoreError> {
        let key = &agent.key;
        let now = timestamp::now_s();
        // The agent record: its summary, under a CAS on the version read, never on a
        // tombstone.
        let mut expr = Expr::default();
        let condition = condition_expression(&mut expr, &Condition::Version(agent.version), now);
        let state = expr.name(attr::STATE);
        let gone = expr.value("c_gone", s(WakeState::Gone.as_str()));
        let changes = Changes {
            schedule: Some(schedule.map(ScheduleRecord::summary)),
            ..Changes::default()
        };
        update_expression(&mut expr, key, false, &changes);
        let on_agent = Update::builder()
            .table_name(&self.table)
            .set_key(Some(DynamoStore::agent_key_attrs(key)))
            .update_expression(expr.update_expression())
            .condition_expression(format!("{condition} AND {state} <> {gone}"))
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .build()
            .map_err(|e| StoreError::Corrupt(format!("schedule transaction: {e}")))?;
        // The schedule item, under a CAS on its version (none: absent).
        let (at_version, names, values) = if expected_version == 0 {
            ("attribute_not_exists(#pk)", "#pk", None)
        } else {
            (
                "#version = :expected",
                "#version",
                Some(n(expected_version)),
            )
        };
        let name_of = |placeholder: &str| {
            if placeholder == "#pk" {
                attr::PK
            } else {
                attr::VERSION
            }
        };
        let written = schedule.map(|record| {
            let mut written = record.clone();
            written.key = Some(key.clone());
            written.version = expected_version + 1;
            written.updated_at = Some(timestamp::now());
            written
        });
        let on_schedule = match &written {
            Some(record) => {
                let mut item = key_attrs(key);
                let json = serde_json::to_string(record)
                    .map_err(|e| StoreError::Corrupt(format!("schedule: {e}")))?;
                item.insert(attr::DOC.into(), s(&json));
                item.insert(attr::VERSION.into(), n(record.version));
                item.insert(
                    attr::UPDATED_AT.into(),
                    s(record.updated_at.as_deref().unwrap_or_default()),
                );
                if let Some(due) = record.due_at_ms() {
                    item.insert(attr::DUE_PK.into(), s(DUE_PK));
                    item.insert(attr::DUE_AT.into(), n(due));
                }
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(item))
                    .condition_expression(at_version)
                    .expression_attribute_names(names, name_of(names))
                    .set_expression_attribute_values(
                        values.map(|v| HashMap::from([(":expected".to_string(), v)])),
                    )
                    .build()
                    .map_err(|e| StoreError::Corrupt(format!("schedule transaction: {e}")))?;
                TransactWriteItem::builder().put(put).build()
            }
            None => {
                let delete = Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_attrs(key)))
                    .condition_expression(at_version)
                    .expression_attribute_names(names, name_of(names))
                    .set_expression_attribute_values(
                        values.map(|v| HashMap::from([(":expected".to_string(), v)])),
                    )
                    .build()
                    .map_err(|e| StoreError::Corrupt(format!("schedule transaction: {e}")))?;
                TransactWriteItem::builder().delete(delete).build()
            }
        };
        // The SDK fills in the idempotency token, and sends the same one on its retries: a
        // transaction whose answer was lost is not applied twice.
        let result = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().update(on_agent).build())
            .transact_items(on_schedule)
            .send()
            .await;
        match result {
            Ok(_) => Ok(written),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_transaction_canceled_exception()) =>
            {
                Err(StoreError::Contended)
            }
            Err(e) => Err(unavailable("TransactWriteItems", &e)),
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
