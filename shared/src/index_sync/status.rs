//! What the last completed full sync covered, in the [`INDEX_DOCUMENT`]: the list function
//! trusts the index only for the Tools it names.

use serde::{Deserialize, Serialize};

use crate::ambient::now_ms;
use crate::domain::{Kind, ToolRegistry};
use crate::store::{AgentStore, DocumentKey, StoreError};

pub const INDEX_DOCUMENT: DocumentKey<'static> = DocumentKey {
    pk: "SWEEP",
    sk: "INDEX",
};

/// How many times a lost race on one record is retried.
pub(super) const MAX_ROUNDS: usize = 3;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexStatus {
    /// When the last full sync completed (epoch ms).
    pub completed_at_ms: u64,
    /// The snapshot Tools that sync read to their end.
    #[serde(default)]
    pub tools: Vec<String>,
}

impl IndexStatus {
    /// Whether the sync covered every snapshot Tool of `kinds` in `registry`.
    pub fn covers(&self, registry: &ToolRegistry, kinds: &[Kind]) -> bool {
        kinds.iter().all(|k| {
            registry.kind(*k).is_none_or(|t| {
                t.snapshot_tools()
                    .all(|id| self.tools.iter().any(|s| s == id))
            })
        })
    }
}

pub async fn index_status<S: AgentStore>(store: &S) -> Result<Option<IndexStatus>, StoreError> {
    Ok(store
        .get_document(INDEX_DOCUMENT)
        .await?
        .and_then(|d| serde_json::from_value(d.value).ok()))
}

pub async fn record_completion<S: AgentStore>(
    store: &S,
    tools: Vec<String>,
) -> Result<(), StoreError> {
    let status = IndexStatus {
        completed_at_ms: now_ms(),
        tools,
    };
    let value = serde_json::to_value(&status).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let mut version = store
        .get_document(INDEX_DOCUMENT)
        .await?
        .map_or(0, |d| d.version);
    for _ in 0..MAX_ROUNDS {
        match store
            .put_document(INDEX_DOCUMENT, &value, version, None)
            .await
        {
            Ok(_) => return Ok(()),
            Err(StoreError::DocumentConflict { current }) => {
                version = current.map_or(0, |d| d.version)
            }
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Unavailable(
        "the index document kept changing".into(),
    ))
}
