//! How fresh the owner index is (docs/operations.md, "Index freshness"): per snapshot Tool, when
//! the minute refresh last read it and where its next read starts. Lists built from the index say
//! `as_of`: the oldest of those reads over the Tools they cover.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::IndexStatus;
use crate::store::{AgentStore, DocumentKey, StoreError};

pub const REFRESH_DOCUMENT: DocumentKey<'static> = DocumentKey {
    pk: "SWEEP",
    sk: "REFRESH",
};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolMark {
    /// When the last refresh read the Tool to its end (epoch ms, snapwake's clock).
    pub refreshed_at_ms: u64,
    /// `CreateTimeAfter` of the next read (RFC 3339, AgentKit's clock): far enough back to
    /// see again every snapshot still being made and every one AgentKit lists late.
    pub after: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freshness {
    #[serde(default)]
    pub tools: BTreeMap<String, ToolMark>,
}

impl Freshness {
    /// When the index last read every one of `tools` (epoch ms): the oldest, over them, of the
    /// later of the last sync that covered the Tool and its last refresh.
    pub fn as_of<'t>(&self, status: &IndexStatus, tools: impl IntoIterator<Item = &'t str>) -> u64 {
        tools
            .into_iter()
            .map(|tool| {
                let swept = if status.tools.iter().any(|t| t == tool) {
                    status.completed_at_ms
                } else {
                    0
                };
                let refreshed = self.tools.get(tool).map_or(0, |m| m.refreshed_at_ms);
                swept.max(refreshed)
            })
            .min()
            .unwrap_or(status.completed_at_ms)
    }
}

/// The refresh's record and its version (0: none yet).
pub async fn freshness<S: AgentStore>(store: &S) -> Result<(Freshness, u64), StoreError> {
    Ok(match store.get_document(REFRESH_DOCUMENT).await? {
        Some(d) => (
            serde_json::from_value(d.value).unwrap_or_default(),
            d.version,
        ),
        None => (Freshness::default(), 0),
    })
}

/// Write the refresh's record over `version` (one refresh at a time holds its lock).
pub async fn save_freshness<S: AgentStore>(
    store: &S,
    freshness: &Freshness,
    version: u64,
) -> Result<(), StoreError> {
    let value = serde_json::to_value(freshness).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    store
        .put_document(REFRESH_DOCUMENT, &value, version, None)
        .await
        .map(|_| ())
}
