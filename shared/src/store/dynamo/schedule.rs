//! Schedule items in DynamoDB (docs/table.md, "Schedules"): the schedule as JSON in `doc`, and
//! the sparse `by_due` keys (`due_pk = DUE`, `due_at`) only while something is due. One partition
//! key lets a tick ask for all that is due in one query, far under a partition's write limit.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    Delete, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::item::record_from_item;
use super::item::{attr, get_n, get_s, Item};
use super::item::{condition_expression, n, s, update_expression, Expr};
use super::{unavailable, DynamoStore};
use crate::ambient;
use crate::domain::{AgentKey, AgentRecord, ScheduleRecord, WakeState};
use crate::store::port::{self, DUE_INDEX, DUE_PK, IDLE_PK, SCHEDULE_SK};
use crate::store::{
    Changes, Condition, DueCursor, DuePage, DueQuery, IdlePage, ScheduleStore, StoreError,
};

fn key_attrs(key: &AgentKey) -> Item {
    HashMap::from([
        (attr::PK.to_string(), s(&port::schedule_pk(key))),
        (attr::SK.to_string(), s(SCHEDULE_SK)),
    ])
}

fn from_item(item: &Item) -> Result<ScheduleRecord, StoreError> {
    let pk = get_s(item, attr::PK)?.unwrap_or_default();
    let key = port::parse_schedule_pk(&pk)?;
    let json = get_s(item, attr::DOC)?
        .ok_or_else(|| StoreError::Corrupt(format!("schedule {pk} without doc")))?;
    let mut record: ScheduleRecord = serde_json::from_str(&json)
        .map_err(|e| StoreError::Corrupt(format!("schedule {pk}: {e}")))?;
    record.key = Some(key);
    record.version = get_n(item, attr::VERSION)?.unwrap_or(0);
    record.updated_at = get_s(item, attr::UPDATED_AT)?;
    Ok(record)
}

/// A schedule item's write at `expected_version` (0: none yet): the document, `version + 1`,
/// and the index keys set or removed with it, so the index never shows a due time the item lacks.
struct ItemWrite {
    update: String,
    condition: &'static str,
    names: Item,
    values: Item,
}

fn item_write(record: &ScheduleRecord, expected_version: u64) -> Result<ItemWrite, StoreError> {
    let json =
        serde_json::to_string(record).map_err(|e| StoreError::Corrupt(format!("schedule: {e}")))?;
    let due = record.due_at_ms();
    let mut update = "SET #doc = :doc, #updated_at = :updated_at, \
         #version = if_not_exists(#version, :zero) + :one"
        .to_string();
    update.push_str(if due.is_some() {
        ", #due_pk = :due_pk, #due_at = :due_at"
    } else {
        " REMOVE #due_pk, #due_at"
    });
    let mut names: Item = HashMap::new();
    for (placeholder, name) in [
        ("#doc", attr::DOC),
        ("#updated_at", attr::UPDATED_AT),
        ("#version", attr::VERSION),
        ("#due_pk", attr::DUE_PK),
        ("#due_at", attr::DUE_AT),
    ] {
        names.insert(placeholder.into(), s(name));
    }
    let mut values: Item = HashMap::from([
        (":doc".to_string(), s(&json)),
        (":updated_at".to_string(), s(&ambient::now())),
        (":zero".to_string(), n(0)),
        (":one".to_string(), n(1)),
    ]);
    if let Some(due) = due {
        values.insert(":due_pk".into(), s(DUE_PK));
        values.insert(":due_at".into(), n(due));
    }
    let condition = if expected_version == 0 {
        names.insert("#pk".into(), s(attr::PK));
        "attribute_not_exists(#pk)"
    } else {
        values.insert(":expected".into(), n(expected_version));
        "#version = :expected"
    };
    Ok(ItemWrite {
        update,
        condition,
        names,
        values,
    })
}

/// Expression attribute names as the SDK takes them (the builder keeps them as values).
fn names_of(names: Item) -> HashMap<String, String> {
    names
        .into_iter()
        .filter_map(|(k, v)| v.as_s().ok().map(|v| (k, v.clone())))
        .collect()
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
        let write = item_write(record, expected_version)?;
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key_attrs(key)))
            .update_expression(write.update)
            .condition_expression(write.condition)
            .set_expression_attribute_names(Some(names_of(write.names)))
            .set_expression_attribute_values(Some(write.values))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
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
        let now = ambient::now_s();
        // The agent record: its summary, under a CAS on the version read, never on a tombstone.
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
        // The schedule item under a CAS on its version: `UpdateItem` or `DeleteItem`, which the
        // functions' roles already allow.
        let written = schedule.map(|record| {
            let mut written = record.clone();
            written.key = Some(key.clone());
            written.version = expected_version + 1;
            written.updated_at = Some(ambient::now());
            written
        });
        let invalid = |e: aws_sdk_dynamodb::error::BuildError| {
            StoreError::Corrupt(format!("schedule transaction: {e}"))
        };
        let on_schedule = match &written {
            Some(record) => {
                let write = item_write(record, expected_version)?;
                let update = Update::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_attrs(key)))
                    .update_expression(write.update)
                    .condition_expression(write.condition)
                    .set_expression_attribute_names(Some(names_of(write.names)))
                    .set_expression_attribute_values(Some(write.values))
                    .build()
                    .map_err(invalid)?;
                TransactWriteItem::builder().update(update).build()
            }
            None => {
                let (condition, name, value) = match expected_version {
                    0 => ("attribute_not_exists(#pk)", ("#pk", attr::PK), None),
                    v => (
                        "#version = :expected",
                        ("#version", attr::VERSION),
                        Some(n(v)),
                    ),
                };
                let delete = Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(key_attrs(key)))
                    .condition_expression(condition)
                    .expression_attribute_names(name.0, name.1)
                    .set_expression_attribute_values(
                        value.map(|v| HashMap::from([(":expected".to_string(), v)])),
                    )
                    .build()
                    .map_err(invalid)?;
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

    async fn due_schedules(&self, q: DueQuery<'_>) -> Result<DuePage, StoreError> {
        let (records, next) = self
            .due_partition(DUE_PK, q, from_item, port::parse_schedule_pk)
            .await?;
        Ok(DuePage { records, next })
    }

    async fn idle_agents(&self, q: DueQuery<'_>) -> Result<IdlePage, StoreError> {
        let (records, next) = self
            .due_partition(IDLE_PK, q, record_from_item, port::parse_agent_pk)
            .await?;
        Ok(IdlePage { records, next })
    }
}

impl DynamoStore {
    /// One page of the `by_due` index's partition `due_pk` (the schedules' or the idle
    /// agents'): its items as `read` reads them, and where the next page starts, if there is
    /// one (its last item's agent, by `key_of` its `pk`).
    async fn due_partition<T>(
        &self,
        due_pk: &str,
        q: DueQuery<'_>,
        read: fn(&Item) -> Result<T, StoreError>,
        key_of: fn(&str) -> Result<AgentKey, StoreError>,
    ) -> Result<(Vec<T>, Option<DueCursor>), StoreError> {
        let start = q.after.map(|c| {
            let (pk, sk) = if due_pk == IDLE_PK {
                (port::agent_pk(&c.key), port::AGENT_SK)
            } else {
                (port::schedule_pk(&c.key), SCHEDULE_SK)
            };
            HashMap::from([
                (attr::PK.to_string(), s(&pk)),
                (attr::SK.to_string(), s(sk)),
                (attr::DUE_PK.to_string(), s(due_pk)),
                (attr::DUE_AT.to_string(), n(c.due_at_ms)),
            ])
        });
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(DUE_INDEX)
            .key_condition_expression("#due_pk = :due_pk AND #due_at <= :until")
            .expression_attribute_names("#due_pk", attr::DUE_PK)
            .expression_attribute_names("#due_at", attr::DUE_AT)
            .expression_attribute_values(":due_pk", s(due_pk))
            .expression_attribute_values(":until", n(q.until_ms))
            .limit(i32::try_from(q.limit.max(1)).unwrap_or(i32::MAX))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| unavailable("Query", &e))?;
        let next = match out.last_evaluated_key() {
            Some(lek) if !lek.is_empty() => Some(DueCursor {
                key: key_of(&get_s(lek, attr::PK)?.unwrap_or_default())?,
                due_at_ms: get_n(lek, attr::DUE_AT)?.unwrap_or(0),
            }),
            _ => None,
        };
        let items = out.items.unwrap_or_default();
        Ok((items.iter().map(read).collect::<Result<_, _>>()?, next))
    }
}
