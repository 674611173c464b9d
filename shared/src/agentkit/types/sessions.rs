//! The session actions: ListSessions, GetSession, CreateSession, DeleteSession.

use serde::{Deserialize, Serialize};

use crate::agentkit::types::Secret;

use super::resources::{
    Action, Empty, Filter, MetadataEntry, MetadataFilter, Session, SESSION_TTL_S,
};

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
