//! The deploy report (docs/agentkit.md, "Registry, lock and report"): the function's answer,
//! also logged as one line. It holds Tool ids and names, never an env value.

use serde::{Deserialize, Serialize};

use snapwake::domain::{Kind, Retention, ToolRegistry};

/// What a run did (or, for a dry run, would do) to one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryStatus {
    Unchanged,
    Created,
    /// UpdateTool (snapshots switched on, envs changed).
    Updated,
    /// An existing Tool found by name (or a legacy Tool re-purposed) taken into the registry.
    Adopted,
    /// Not Ready (or snapshots not on) before the deadline: the next run finishes it.
    Pending,
    /// Could not be reconciled; `reason` says why.
    Failed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    Applied,
    Planned,
    /// Another deploy holds the lock: nothing was done.
    AlreadyRunning,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryReport {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    pub retention: Retention,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    pub status: EntryStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The steps planned (dry run) or taken, e.g. `create_tool`, `set_envs(KEYS)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
    /// Line-by-line notes (legacy migration).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub outcome: RunOutcome,
    pub dry_run: bool,
    pub migrate_legacy: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    pub entries: Vec<EntryReport>,
    pub warnings: Vec<String>,
    /// Tool writes AgentKit accepted.
    pub writes: u64,
    /// Throttles (429) AgentKit answered.
    pub throttles: u64,
    pub duration_ms: u64,
    pub registry_written: bool,
    /// The registry as it stands after the run (read or written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<ToolRegistry>,
}

impl Report {
    pub fn entry(&self, key: &str) -> Option<&EntryReport> {
        self.entries.iter().find(|e| e.key == key)
    }

    pub fn count(&self, status: EntryStatus) -> usize {
        self.entries.iter().filter(|e| e.status == status).count()
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}
