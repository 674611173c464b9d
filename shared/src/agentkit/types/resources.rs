//! The records the actions share (session, snapshot, Tool), and the [`Action`] trait.
//!
//! The snapshot actions, and SetSessionTtl.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub const API_VERSION: &str = "2025-10-30";

/// Session TTL used by CreateSession and ResumeSessionFromSnapshot: 8 hours.
pub const SESSION_TTL_S: u64 = 28_800;

/// Largest page AgentKit serves.
pub const MAX_PAGE_SIZE: u32 = 100;

/// One AgentKit action: its name and the `Result` it answers with.
pub trait Action: Serialize + DeserializeOwned + Send + Sync {
    const NAME: &'static str;
    type Output: Serialize + DeserializeOwned + Default + Send;
    /// Whether sending it twice has the effect of once. Only then is a request that may have
    /// reached AgentKit retried: a second CreateSession or Resume starts a second, paid sandbox.
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

/// An environment variable of a Tool. Values may be sandbox credentials: `Debug` hides them.
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
    sessions.max_by_key(|s| crate::ambient::sort_key(s.created_at.as_deref()))
}

/// The saved workspace of an expired session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct Snapshot {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
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

// [`Secret`]: a string never shown (a credential, a token, a key, a session Endpoint). `Debug`
// prints `<redacted>` and there is no `Display`, so no `{:?}` of a type holding one can leak it
// into a log line (docs/security.md). [`Secret::expose`] names the moment it leaves.
/// Serialises as the bare string: AgentKit sends and expects it so.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value itself, for the one place that must send or use it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn into_exposed(self) -> String {
        self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Secret {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Secret {
        Secret(value.to_string())
    }
}

#[cfg(test)]
mod secret_tests;
