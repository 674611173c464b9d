//! Sandbox kinds and retention.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The sandbox type of an agent; each maps to one AgentKit `ToolType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Codex,
    Openclaw,
    Hermes,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Codex, Kind::Openclaw, Kind::Hermes];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Codex => "codex",
            Kind::Openclaw => "openclaw",
            Kind::Hermes => "hermes",
        }
    }

    pub fn tool_type(self) -> &'static str {
        match self {
            Kind::Codex => "CodeEnv",
            Kind::Openclaw => "ArkClawEnv",
            Kind::Hermes => "HermesEnv",
        }
    }

    pub fn from_tool_type(tool_type: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.tool_type() == tool_type)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so a width in a format string (a table column) is honoured.
        f.pad(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown kind {0:?}: expected codex, openclaw or hermes")]
pub struct ParseKindError(pub String);

impl FromStr for Kind {
    type Err = ParseKindError;

    /// Exact, lower-case names only: `Codex` is not a kind, so URLs have one spelling.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| ParseKindError(s.to_string()))
    }
}

/// What happens to an agent's workspace when its session expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Retention {
    /// The session is destroyed at expiry (Tool with `EnableSnapshot=false`).
    Temporary,
    /// A snapshot is kept at expiry (Tool with `EnableSnapshot=true`).
    Recoverable,
}

impl Retention {
    pub const ALL: [Retention; 2] = [Retention::Temporary, Retention::Recoverable];

    pub fn as_str(self) -> &'static str {
        match self {
            Retention::Temporary => "temporary",
            Retention::Recoverable => "recoverable",
        }
    }

    pub fn enable_snapshot(self) -> bool {
        self == Retention::Recoverable
    }
}

impl fmt::Display for Retention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown retention {0:?}: expected temporary or recoverable")]
pub struct ParseRetentionError(pub String);

impl FromStr for Retention {
    type Err = ParseRetentionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Retention::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| ParseRetentionError(s.to_string()))
    }
}

/// Which agent: its kind and its id, the key of its record and of everything about it.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_names_and_tool_types() {
        for k in Kind::ALL {
            assert_eq!(k.as_str().parse::<Kind>(), Ok(k));
            assert_eq!(Kind::from_tool_type(k.tool_type()), Some(k));
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
        }
        assert_eq!(Kind::Codex.tool_type(), "CodeEnv");
        assert_eq!(Kind::Openclaw.tool_type(), "ArkClawEnv");
        assert_eq!(Kind::Hermes.tool_type(), "HermesEnv");
    }

    #[test]
    fn kind_names_are_exact() {
        assert!("Codex".parse::<Kind>().is_err());
        assert!("".parse::<Kind>().is_err());
        assert!("codex ".parse::<Kind>().is_err());
        assert_eq!(Kind::from_tool_type("codeenv"), None);
    }

    #[test]
    fn retention_parses_and_maps_to_snapshots() {
        assert_eq!("recoverable".parse(), Ok(Retention::Recoverable));
        assert_eq!("temporary".parse(), Ok(Retention::Temporary));
        assert!("Temporary".parse::<Retention>().is_err());
        assert!(Retention::Recoverable.enable_snapshot());
        assert!(!Retention::Temporary.enable_snapshot());
    }
}
