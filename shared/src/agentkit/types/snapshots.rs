//! The snapshot actions, and SetSessionTtl.

use serde::{Deserialize, Serialize};

use super::resources::{Action, Snapshot, SESSION_TTL_S};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct ListSessionSnapshots {
    pub tool_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Created after this RFC 3339 instant; inclusive or not is unsaid: overlap and de-duplicate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_time_after: Option<String>,
    /// The same, before: the sweep reads a big Tool in time slices (`index_sync::slices`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_time_before: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListSessionSnapshotsResult {
    pub snapshots: Vec<Snapshot>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

impl Action for ListSessionSnapshots {
    const NAME: &'static str = "ListSessionSnapshots";
    type Output = ListSessionSnapshotsResult;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct ResumeSessionFromSnapshot {
    pub tool_id: String,
    pub snapshot_id: String,
    pub ttl: u64,
    pub create_new_instance: bool,
}

impl ResumeSessionFromSnapshot {
    /// A resume with the standard 8 h TTL into the snapshot's own instance.
    pub fn new(tool_id: &str, snapshot_id: &str) -> Self {
        ResumeSessionFromSnapshot {
            tool_id: tool_id.into(),
            snapshot_id: snapshot_id.into(),
            ttl: SESSION_TTL_S,
            create_new_instance: false,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ResumeSessionFromSnapshotResult {
    pub session_id: String,
}

impl Action for ResumeSessionFromSnapshot {
    const NAME: &'static str = "ResumeSessionFromSnapshot";
    const IDEMPOTENT: bool = false;
    type Output = ResumeSessionFromSnapshotResult;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct DeleteSessionSnapshot {
    pub tool_id: String,
    pub snapshot_id: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct DeleteSessionSnapshotResult {
    pub snapshot_id: String,
}

impl Action for DeleteSessionSnapshot {
    const NAME: &'static str = "DeleteSessionSnapshot";
    type Output = DeleteSessionSnapshotResult;
}

/// Take a snapshot of a live session now (a Tool with `EnableSnapshot`). Its status starts
/// `Creating` and turns `Ready`; only then is it wakeable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct CreateSessionSnapshot {
    pub session_id: String,
    pub tool_id: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct CreateSessionSnapshotResult {
    pub snapshot_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl Action for CreateSessionSnapshot {
    const NAME: &'static str = "CreateSessionSnapshot";
    /// A second request makes a second snapshot.
    const IDEMPOTENT: bool = false;
    type Output = CreateSessionSnapshotResult;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct GetSessionSnapshot {
    pub snapshot_id: String,
    pub tool_id: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct GetSessionSnapshotResult {
    pub snapshot: Snapshot,
}

impl Action for GetSessionSnapshot {
    const NAME: &'static str = "GetSessionSnapshot";
    type Output = GetSessionSnapshotResult;
}

/// Make a live session last `Ttl` more `TtlUnit`s from now.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct SetSessionTtl {
    pub session_id: String,
    pub tool_id: String,
    pub ttl: u64,
    pub ttl_unit: String,
}

impl SetSessionTtl {
    pub fn seconds(tool_id: &str, session_id: &str, ttl_s: u64) -> Self {
        SetSessionTtl {
            session_id: session_id.to_string(),
            tool_id: tool_id.to_string(),
            ttl: ttl_s,
            ttl_unit: "second".into(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SetSessionTtlResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expire_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
}

impl Action for SetSessionTtl {
    const NAME: &'static str = "SetSessionTtl";
    /// Setting the same TTL twice sets it once (each is "from now").
    const IDEMPOTENT: bool = true;
    type Output = SetSessionTtlResult;
}
