//! The agent view: what the API says about one agent, from AgentKit's truth plus the agent
//! record. It has no field that could hold a session `Endpoint` or a credential.

use serde::{Deserialize, Serialize};

use super::kind::{Kind, Retention};

/// The state a person sees (docs/http-api.md, "The agent view").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Awake,
    Starting,
    Waking,
    /// No live session, at least one Ready snapshot.
    Asleep,
    Deleting,
    /// No live session and no Ready snapshot.
    Unavailable,
    Sleeping,
    /// The live session is in an undocumented status (raw in `session.status`): nothing is
    /// woken or created beside it.
    Unknown,
}

impl AgentState {
    pub const ALL: [AgentState; 8] = [
        AgentState::Awake,
        AgentState::Starting,
        AgentState::Waking,
        AgentState::Asleep,
        AgentState::Deleting,
        AgentState::Unavailable,
        AgentState::Sleeping,
        AgentState::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Awake => "awake",
            AgentState::Starting => "starting",
            AgentState::Waking => "waking",
            AgentState::Asleep => "asleep",
            AgentState::Deleting => "deleting",
            AgentState::Unavailable => "unavailable",
            AgentState::Sleeping => "sleeping",
            AgentState::Unknown => "unknown",
        }
    }
}

impl std::str::FromStr for AgentState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AgentState::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| {
                "state must be one of awake, starting, waking, asleep, deleting, unavailable, sleeping, unknown".into()
            })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionView {
    pub session_id: String,
    pub status: Option<String>,
    pub created_at: Option<String>,
    pub expire_at: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotView {
    pub snapshot_id: String,
    pub source_session_id: Option<String>,
    pub status: Option<String>,
    pub reason: Option<String>,
    pub created_at: Option<String>,
}

/// The wake lock as the API shows it: `waking`, or `failed` with a code and snapwake's words
/// ([`super::failure`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeView {
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What went wrong, in snapwake's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// `SNAPSHOT_IN_PROGRESS` while a wake waits for AgentKit to save the last session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl WakeView {
    pub fn in_flight(state: &str, since: Option<String>, session_id: Option<String>) -> WakeView {
        WakeView {
            state: state.to_string(),
            since,
            session_id,
            error: None,
            error_code: None,
            reason: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentView {
    pub kind: Kind,
    pub agent_id: String,
    pub display_name: String,
    /// `None` for ownerless legacy agents.
    pub owner: Option<String>,
    pub created_by: Option<String>,
    pub retention: Retention,
    pub state: AgentState,
    pub session: Option<SessionView>,
    /// Newest first.
    pub snapshots: Vec<SnapshotView>,
    pub wake: Option<WakeView>,
    /// The agent record's version, quoted; absent when no record exists yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// When the record was last written (RFC 3339); only on views answered from the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// From `SNAPWAKE_OPEN_URL` while awake, else null. Never the session's Endpoint.
    #[serde(default)]
    pub open_url: Option<String>,
    #[serde(default)]
    pub schedule: Option<super::schedule::ScheduleView>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_serialises_in_the_documented_shape() {
        let view = AgentView {
            kind: Kind::Codex,
            agent_id: "studio-alice-0f3c".into(),
            display_name: "Data helper".into(),
            owner: Some("alice".into()),
            created_by: Some("alice@example.com".into()),
            retention: Retention::Recoverable,
            state: AgentState::Asleep,
            session: None,
            snapshots: vec![SnapshotView {
                snapshot_id: "snap-1".into(),
                source_session_id: Some("s-1".into()),
                status: Some("Ready".into()),
                reason: Some("Expired".into()),
                created_at: Some("2026-12-01T00:00:00Z".into()),
            }],
            wake: None,
            etag: Some("\"7\"".into()),
            as_of: None,
            open_url: None,
            schedule: None,
        };
        let v = serde_json::to_value(&view).unwrap();
        assert_eq!(v["kind"], "codex");
        assert_eq!(v["retention"], "recoverable");
        assert_eq!(v["state"], "asleep");
        assert!(v["session"].is_null());
        assert!(v["wake"].is_null());
        assert_eq!(v["snapshots"][0]["source_session_id"], "s-1");
        assert_eq!(v["etag"], "\"7\"");
        let back: AgentView = serde_json::from_value(v).unwrap();
        assert_eq!(back, view);
    }
}
