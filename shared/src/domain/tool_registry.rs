//! The tool registry: which AgentKit Tool serves each kind and retention. Deploy writes it (CAS
//! on `version`); everything else reads it through `crate::registry_cache`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Kind, Retention};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindTools {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recoverable: Option<String>,
    /// Tools that once held snapshots of this kind and may still: their snapshots stay listed,
    /// wakeable and deletable, but no new agent is created on them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legacy_snapshot_tools: Vec<String>,
}

impl KindTools {
    pub fn tool(&self, retention: Retention) -> Option<&str> {
        match retention {
            Retention::Temporary => self.temporary.as_deref(),
            Retention::Recoverable => self.recoverable.as_deref(),
        }
    }

    /// Retention when none is asked for (docs/http-api.md, "GET /v1/capabilities").
    pub fn default_retention(&self) -> Retention {
        if self.recoverable.is_some() {
            Retention::Recoverable
        } else {
            Retention::Temporary
        }
    }

    /// Every Tool that may hold snapshots of this kind: the recoverable one first.
    pub fn snapshot_tools(&self) -> impl Iterator<Item = &str> {
        self.recoverable
            .as_deref()
            .into_iter()
            .chain(self.legacy_snapshot_tools.iter().map(String::as_str))
    }

    pub fn all_tools(&self) -> impl Iterator<Item = &str> {
        self.temporary
            .as_deref()
            .into_iter()
            .chain(self.snapshot_tools())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRegistry {
    #[serde(default)]
    pub kinds: BTreeMap<Kind, KindTools>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// +1 on every write (CAS).
    #[serde(default)]
    pub version: u64,
}

impl ToolRegistry {
    pub fn kind(&self, kind: Kind) -> Option<&KindTools> {
        self.kinds.get(&kind)
    }

    pub fn tool(&self, kind: Kind, retention: Retention) -> Option<&str> {
        self.kind(kind).and_then(|k| k.tool(retention))
    }

    /// [`KindTools::default_retention`]; temporary for a kind with no Tools at all.
    pub fn default_retention(&self, kind: Kind) -> Retention {
        self.kind(kind)
            .map_or(Retention::Temporary, KindTools::default_retention)
    }

    pub fn is_snapshot_tool(&self, kind: Kind, tool_id: &str) -> bool {
        self.kind(kind)
            .is_some_and(|k| k.snapshot_tools().any(|t| t == tool_id))
    }
}
