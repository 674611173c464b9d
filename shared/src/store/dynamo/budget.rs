//! AgentKit budget items in DynamoDB (docs/table.md, "The AgentKit budget"): `next_at`, the
//! earliest untaken slot (epoch ms), and the last slowdown. A slot is taken by one `UpdateItem`
//! whose condition is the check, so concurrent callers each get their own slot with no read; an
//! idle bucket is restarted at now by a second conditional write, which one of two racing wins.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::expression::{n, s};
use super::item::{attr, get_n, Item};
use super::{unavailable, DynamoStore};
use crate::store::keys::{budget_pk, BUDGET_SK};
use crate::store::{BudgetStore, Reserved, Slowdown, StoreError};

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
