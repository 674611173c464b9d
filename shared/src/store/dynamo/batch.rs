//! `get_many` in DynamoDB: `BatchGetItem`, 100 keys a request, consistent as `get`. Keys left
//! unprocessed are asked again after a short pause, a few times, then the read is `Unavailable`.

use std::time::Duration;

use aws_sdk_dynamodb::types::KeysAndAttributes;

use super::item::live_record;
use super::{unavailable, DynamoStore};
use crate::ambient::now_s;
use crate::domain::{AgentKey, AgentRecord};
use crate::store::{StoreError, GET_MANY_KEYS};

const UNPROCESSED_ROUNDS: u32 = 4;

impl DynamoStore {
    /// The live records of `keys` (expired and missing ones left out).
    pub(super) async fn batch_get(
        &self,
        keys: &[AgentKey],
    ) -> Result<Vec<AgentRecord>, StoreError> {
        let store = self;
        let mut records = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(GET_MANY_KEYS) {
            let mut pending: Vec<_> = chunk.iter().map(DynamoStore::agent_key_attrs).collect();
            for attempt in 0..=UNPROCESSED_ROUNDS {
                if pending.is_empty() {
                    break;
                }
                if attempt == UNPROCESSED_ROUNDS {
                    return Err(StoreError::Unavailable(format!(
                        "BatchGetItem: {} keys still unprocessed",
                        pending.len()
                    )));
                }
                if attempt > 0 {
                    tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                }
                let asked = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut pending)))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| StoreError::Corrupt(format!("BatchGetItem: {e}")))?;
                let out = store
                    .client
                    .batch_get_item()
                    .request_items(&store.table, asked)
                    .send()
                    .await
                    .map_err(|e| unavailable("BatchGetItem", &e))?;
                let now = now_s();
                for item in out
                    .responses()
                    .and_then(|r| r.get(&store.table))
                    .into_iter()
                    .flatten()
                {
                    records.extend(live_record(item, now)?);
                }
                pending = out
                    .unprocessed_keys()
                    .and_then(|u| u.get(&store.table))
                    .map(|k| k.keys().to_vec())
                    .unwrap_or_default();
            }
        }
        Ok(records)
    }
}
