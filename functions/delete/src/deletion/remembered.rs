//! Deleted snapshots are remembered (until the tombstone TTL) so that a retried delete of one
//! answers 204 again instead of 404: the client whose first answer was lost learns what
//! happened.

use super::*;

impl<'a, S: AgentStore + ScheduleStore, K: AgentKit> Deleter<'a, S, K> {
    /// Whether `snapshot_id` of `key` was deleted through snapwake (within the tombstone
    /// time), so that a repeated delete answers 204 rather than 404.
    pub async fn was_deleted(&self, key: &AgentKey, snapshot_id: &str) -> Result<bool, Error> {
        let pk = deleted_snapshot_pk(key, snapshot_id);
        let doc = self
            .store
            .get_document(DocumentKey {
                pk: &pk,
                sk: DELETED_SNAPSHOT_SK,
            })
            .await?;
        Ok(doc.is_some())
    }

    /// Remember a deleted snapshot for [`Deleter::was_deleted`]; a repeat finds it written.
    pub(super) async fn remember_deleted(
        &self,
        key: &AgentKey,
        snapshot_id: &str,
    ) -> Result<(), Error> {
        let pk = deleted_snapshot_pk(key, snapshot_id);
        let value = serde_json::json!({ "deleted_at_ms": now_ms() });
        let doc_key = DocumentKey {
            pk: &pk,
            sk: DELETED_SNAPSHOT_SK,
        };
        match self
            .store
            .put_document(doc_key, &value, 0, Some(now_s() + TOMBSTONE_TTL_S))
            .await
        {
            Ok(_) | Err(StoreError::DocumentConflict { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

const DELETED_SNAPSHOT_SK: &str = "DELETED";

fn deleted_snapshot_pk(key: &AgentKey, snapshot_id: &str) -> String {
    format!("SNAPDEL#{}#{}#{}", key.kind, key.agent_id, snapshot_id)
}
