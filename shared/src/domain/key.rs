//! Which agent: its kind and its id, the key of its record and of everything about it.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::kind::Kind;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AgentKey {
    pub kind: Kind,
    pub agent_id: String,
}

impl AgentKey {
    pub fn new(kind: Kind, agent_id: impl Into<String>) -> Self {
        AgentKey {
            kind,
            agent_id: agent_id.into(),
        }
    }
}

impl fmt::Display for AgentKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.kind, self.agent_id)
    }
}
