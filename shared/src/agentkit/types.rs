//! The AgentKit actions snapwake calls, as typed requests and results (docs/agentkit.md, "Actions
//! used"). Field names are PascalCase on the wire; absent optional fields are omitted. Every
//! object field the service may leave out is optional, and unknown fields are ignored, so a
//! newer API version does not break reading.
//!
//! Each request type implements [`Action`], which names the action and its result type; the
//! client and the simulator both speak through these types. Requests refuse unknown fields
//! when read (the simulator is as strict as the service); results ignore them.
//!
//! These are the wire types of the service, which the simulator speaks too: one file, in the
//! order of the API's reference (records, then sessions, snapshots and Tools), kept whole so the
//! contract reads in one place.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// The API version every action is called with.
pub const API_VERSION: &str = "2025-10-30";

/// Session TTL used by CreateSession and ResumeSessionFromSnapshot: 8 hours.
pub const SESSION_TTL_S: u64 = 28_800;

/// Largest page AgentKit serves.
pub const MAX_PAGE_SIZE: u32 = 100;

/// One AgentKit action: its name and the `Result` it answers with.
pub trait Action: Serialize + DeserializeOwned + Send + Sync {
    const NAME: &'static str;
    type Output: Serialize + DeserializeOwned + Default + Send;
    /// CreateTool and UpdateTool share a write throttle (3/s) in AgentKit.
    const IS_TOOL_WRITE: bool = false;
    /// Whether sending the same request twice has the effect of sending it once. A request
    /// that may have reached AgentKit (a timeout after it was sent) is retried only when this
    /// holds: a second CreateSession or ResumeSessionFromSnapshot would start a second,
    /// billable sandbox.
    const IDEMPOTENT: bool = true;
}

/// A `{Key, Type, Value}` metadata entry of a session (or `SessionMetadata` of a snapshot).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct MetadataEntry {
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
    pub value: String,
}

impl MetadataEntry {
    /// A `String`-typed entry, as CreateSession wants them.
    pub fn string(key: impl Into<String>, value: impl Into<String>) -> Self {
        MetadataEntry {
            key: key.into(),
            r#type: Some("String".into()),
            value: value.into(),
        }
    }
}

/// The value of `key` in a metadata list, if present.
pub fn metadata_value<'a>(entries: &'a [MetadataEntry], key: &str) -> Option<&'a str> {
    entries
        .iter()
        .find(|e| e.key == key)
        .map(|e| e.value.as_str())
}

/// A metadata filter of ListSessions: `{Key, Value}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct MetadataFilter {
    pub key: String,
    pub value: String,
}

/// A `{Name, Values}` filter.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct Filter {
    pub name: String,
    pub values: Vec<String>,
}

impl Filter {
    pub fn one(name: impl Into<String>, value: impl Into<String>) -> Self {
        Filter {
            name: name.into(),
            values: vec![value.into()],
        }
    }
}

/// A `{Key, Value}` environment variable of a Tool. Values may be credentials of the sandbox,
/// so `Debug` shows the key only.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct EnvVar {
    pub key: String,
    pub value: String,
}

impl std::fmt::Debug for EnvVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvVar")
            .field("key", &self.key)
            .field("value", &"<redacted>")
            .finish()
    }
}

/// A running (or ended) sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct Session {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Carries an auth query string: never log it, never return it ([`Secret`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expire_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_type: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<MetadataEntry>,
}

impl Session {
    pub fn is_active(&self) -> bool {
        crate::domain::is_session_active(self.status.as_deref())
    }

    pub fn is_usable(&self) -> bool {
        crate::domain::is_session_usable(self.status.as_deref(), self.endpoint.is_some())
    }

    /// The session's phase (docs/wake-protocol.md, "Statuses are an open set").
    pub fn phase(&self) -> crate::domain::SessionPhase {
        crate::domain::SessionPhase::of(self.status.as_deref(), self.endpoint.is_some())
    }
}

/// The most recently created session of an iterator (by instant, never by text).
pub fn newest_session(sessions: impl Iterator<Item = Session>) -> Option<Session> {
    sessions.max_by_key(|s| crate::timestamp::sort_key(s.created_at.as_deref()))
}

/// The saved workspace of an expired session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct Snapshot {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// The session the snapshot was taken from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub session_metadata: Vec<MetadataEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_type: Option<String>,
}

impl Snapshot {
    pub fn is_wakeable(&self) -> bool {
        crate::domain::is_snapshot_wakeable(self.status.as_deref())
    }

    pub fn is_in_progress(&self) -> bool {
        crate::domain::is_snapshot_in_progress(self.status.as_deref())
    }

    /// The snapshot's phase.
    pub fn phase(&self) -> crate::domain::SnapshotPhase {
        crate::domain::SnapshotPhase::of(self.status.as_deref())
    }
}

/// A sandbox template.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct Tool {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_snapshot: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub envs: Vec<EnvVar>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_name: Option<String>,
}

impl Tool {
    pub fn is_ready(&self) -> bool {
        self.status
            .as_deref()
            .is_some_and(|s| s.eq_ignore_ascii_case("ready"))
    }

    pub fn is_failed(&self) -> bool {
        const FAILED: [&str; 5] = ["error", "failed", "createfailed", "deleting", "deleted"];
        self.status
            .as_deref()
            .is_some_and(|s| FAILED.iter().any(|f| f.eq_ignore_ascii_case(s)))
    }
}

/// An empty `Result` (actions that answer nothing of interest).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Empty {}

// ---------------------------------------------------------------------------------------------
// Sessions

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct ListSessions {
    pub tool_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
    /// Sessions whose metadata carries every one of these `{Key, Value}` pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Vec<MetadataFilter>>,
    /// `[{Name: "UserSessionId", Values: [...]}]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<Filter>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListSessionsResult {
    pub session_infos: Vec<Session>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

impl Action for ListSessions {
    const NAME: &'static str = "ListSessions";
    type Output = ListSessionsResult;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct GetSession {
    pub tool_id: String,
    pub session_id: String,
}

impl Action for GetSession {
    const NAME: &'static str = "GetSession";
    type Output = Session;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct CreateSession {
    pub tool_id: String,
    pub ttl: u64,
    pub ttl_unit: String,
    pub user_session_id: String,
    pub metadata: Vec<MetadataEntry>,
}

impl CreateSession {
    /// A session of the standard 8 h TTL.
    pub fn new(tool_id: &str, user_session_id: &str, metadata: Vec<MetadataEntry>) -> Self {
        CreateSession {
            tool_id: tool_id.into(),
            ttl: SESSION_TTL_S,
            ttl_unit: "second".into(),
            user_session_id: user_session_id.into(),
            metadata,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct CreateSessionResult {
    pub session_id: String,
    /// Carries an auth query string: never log it, never return it ([`Secret`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Secret>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_session_id: Option<String>,
}

impl Action for CreateSession {
    const NAME: &'static str = "CreateSession";
    const IDEMPOTENT: bool = false;
    type Output = CreateSessionResult;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct DeleteSession {
    pub tool_id: String,
    pub session_id: String,
}

impl Action for DeleteSession {
    const NAME: &'static str = "DeleteSession";
    type Output = Empty;
}

// ---------------------------------------------------------------------------------------------
// Snapshots

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct ListSessionSnapshots {
    pub tool_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
    /// Exact match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_session_id: Option<String>,
    /// Exact match on the source session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Only snapshots created after this instant (RFC 3339). The SDK's models have it, with
    /// no word on whether the bound is inclusive: callers overlap and de-duplicate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_time_after: Option<String>,
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
    /// `ttl_s` seconds from now.
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

// ---------------------------------------------------------------------------------------------
// Tools

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct ListTools {
    pub project_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
    /// `[{Name: "Name", Values: [<exact name>]}]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<Filter>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct ListToolsResult {
    pub tools: Vec<Tool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

impl Action for ListTools {
    const NAME: &'static str = "ListTools";
    type Output = ListToolsResult;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct GetTool {
    pub tool_id: String,
}

impl Action for GetTool {
    const NAME: &'static str = "GetTool";
    type Output = Tool;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct KeyAuth {
    pub api_key_name: String,
    pub api_key_location: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct AuthorizerConfiguration {
    pub key_auth: KeyAuth,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct NetworkConfiguration {
    pub enable_public_network: bool,
    pub enable_private_network: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct CreateTool {
    pub name: String,
    pub tool_type: String,
    pub project_name: String,
    pub cpu_milli: u32,
    pub memory_mb: u32,
    pub enable_snapshot: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_agent_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorizer_configuration: Option<AuthorizerConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_configuration: Option<NetworkConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envs: Option<Vec<EnvVar>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct CreateToolResult {
    pub tool_id: String,
}

impl Action for CreateTool {
    const NAME: &'static str = "CreateTool";
    const IDEMPOTENT: bool = false;
    type Output = CreateToolResult;
    const IS_TOOL_WRITE: bool = true;
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct UpdateTool {
    pub tool_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enable_snapshot: Option<bool>,
    /// The full list: it replaces the Tool's `Envs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envs: Option<Vec<EnvVar>>,
}

impl Action for UpdateTool {
    const NAME: &'static str = "UpdateTool";
    type Output = Empty;
    const IS_TOOL_WRITE: bool = true;
}

#[cfg(test)]
mod tests;
