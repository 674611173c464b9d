//! Usage rows in DynamoDB (docs/usage.md; the usage mark on agent records is `item.rs`'s): the day rows (`pk` `USAGE#<YYYY-MM-DD>`, `sk` `<owner_key>#<kind>#<agent_id>`),
//! each change added once: `ADD` of its counts and of its id to the row's `changes` set, on
//! the condition that the set does not hold the id yet.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{attr, get_n, get_s, n, s, Expr, Item};
use super::{unavailable, DynamoStore, MIN_QUERY_LIMIT};
use crate::domain::usage::{day_name, Tally, DAY_S};
use crate::domain::AgentKey;
use crate::store::usage::{UsageRow, UsageStore, MOST_ROWS, ROW_KEPT_DAYS};
use crate::store::StoreError;

fn row_pk(day: u64) -> String {
    format!("USAGE#{}", day_name(day))
}

fn row_sk(owner_key: &str, agent: &AgentKey) -> String {
    format!("{owner_key}#{}#{}", agent.kind, agent.agent_id)
}

fn row_from_item(item: &Item, day: u64) -> Result<UsageRow, StoreError> {
    let field = |name: &str| {
        get_s(item, name)?.ok_or_else(|| StoreError::Corrupt(format!("usage row without {name}")))
    };
    let kind = field(attr::KIND)?
        .parse()
        .map_err(|e| StoreError::Corrupt(format!("usage row: {e}")))?;
    let mut values = [0u64; 13];
    for (v, name) in values.iter_mut().zip(Tally::FIELDS) {
        *v = get_n(item, name)?.unwrap_or(0);
    }
    Ok(UsageRow {
        day,
        owner_key: get_s(item, attr::OWNER_KEY)?.unwrap_or_default(),
        owner: get_s(item, attr::OWNER)?,
        agent: AgentKey::new(kind, field(attr::AGENT_ID)?),
        tally: Tally::from_values(values),
    })
}

impl UsageStore for DynamoStore {
    async fn add_usage(&self, row: &UsageRow, change_id: &str) -> Result<bool, StoreError> {
        let mut expr = Expr::default();
        let mut adds = Vec::new();
        for (name, value) in Tally::FIELDS.into_iter().zip(row.tally.values()) {
            if value > 0 {
                let name_ph = expr.name(name);
                let value_ph = expr.value(name, n(value));
                adds.push(format!("{name_ph} {value_ph}"));
            }
        }
        let changes = expr.name(attr::USAGE_CHANGES);
        let id = expr.value("change", s(change_id));
        let ids = expr.value("changes", AttributeValue::Ss(vec![change_id.to_string()]));
        adds.push(format!("{changes} {ids}"));
        expr.set(attr::KIND, s(row.agent.kind.as_str()));
        expr.set(attr::AGENT_ID, s(&row.agent.agent_id));
        expr.set(attr::OWNER_KEY, s(&row.owner_key));
        if let Some(owner) = &row.owner {
            expr.set(attr::OWNER, s(owner));
        }
        expr.set(attr::EXPIRES_AT, n((row.day + 1 + ROW_KEPT_DAYS) * DAY_S));
        let update = format!("{} ADD {}", expr.update_expression(), adds.join(", "));
        let answer = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(&row_pk(row.day)))
            .key(attr::SK, s(&row_sk(&row.owner_key, &row.agent)))
            .update_expression(update)
            .condition_expression(format!("NOT contains({changes}, {id})"))
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            .send()
            .await;
        match answer {
            Ok(_) => Ok(true),
            Err(e)
                if matches!(
                    e.as_service_error(),
                    Some(UpdateItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(unavailable("UpdateItem", &e)),
        }
    }

    async fn usage_rows(
        &self,
        from: u64,
        to: u64,
        owner_keys: Option<&[String]>,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let mut rows = Vec::new();
        let prefixes: Vec<Option<String>> = match owner_keys {
            None => vec![None],
            Some(keys) => keys.iter().map(|k| Some(format!("{k}#"))).collect(),
        };
        for day in from..=to {
            for prefix in &prefixes {
                let mut start = None;
                loop {
                    let mut query = self
                        .client
                        .query()
                        .table_name(&self.table)
                        .expression_attribute_names("#pk", attr::PK)
                        .expression_attribute_values(":pk", s(&row_pk(day)))
                        .limit(i32::try_from(MIN_QUERY_LIMIT * 40).unwrap_or(1000))
                        .set_exclusive_start_key(start.take());
                    query = match prefix {
                        None => query.key_condition_expression("#pk = :pk"),
                        Some(p) => query
                            .key_condition_expression("#pk = :pk AND begins_with(#sk, :owner)")
                            .expression_attribute_names("#sk", attr::SK)
                            .expression_attribute_values(":owner", s(p)),
                    };
                    let out = query.send().await.map_err(|e| unavailable("Query", &e))?;
                    for item in out.items() {
                        rows.push(row_from_item(item, day)?);
                        if rows.len() > MOST_ROWS {
                            return Ok(rows);
                        }
                    }
                    match out.last_evaluated_key() {
                        Some(lek) if !lek.is_empty() => start = Some(lek.clone()),
                        _ => break,
                    }
                }
            }
        }
        Ok(rows)
    }
}
