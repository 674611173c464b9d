//! Sandbox kinds and retention, and the tool registry: which AgentKit Tool serves each kind
//! and retention. Deploy writes the registry (CAS on `version`); everything else reads it through
//! `crate::locate::RegistryCache`.
//!
//! `open_url`: where a person works with an awake agent, from the deployment's template
//! `SNAPWAKE_OPEN_URL` (docs/http-api.md, "The agent view"). Never the session's Endpoint: the
//! template is the studio's own page, which knows how to reach the sandbox.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

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

/// Everything but the unreserved characters of RFC 3986 is escaped in a placeholder's value.
const VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

const PLACEHOLDERS: [&str; 3] = ["{kind}", "{agent_id}", "{session_id}"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenUrl(String);

impl OpenUrl {
    /// An `http(s)://` URL whose only `{…}` are `{kind}`, `{agent_id}` and `{session_id}`.
    pub fn parse(template: &str) -> Result<OpenUrl, String> {
        let t = template.trim();
        if !(t.starts_with("https://") || t.starts_with("http://")) {
            return Err("SNAPWAKE_OPEN_URL must be an http(s) URL".into());
        }
        let mut rest = t.to_string();
        for p in PLACEHOLDERS {
            rest = rest.replace(p, "");
        }
        if rest.contains('{') || rest.contains('}') {
            return Err(
                "SNAPWAKE_OPEN_URL knows only the placeholders {kind}, {agent_id} and {session_id}"
                    .into(),
            );
        }
        Ok(OpenUrl(t.to_string()))
    }

    /// The link to an agent's `session`: the template filled in, each value escaped. Only an
    /// awake agent's view carries it (`crate::view`).
    pub fn fill(&self, kind: Kind, agent_id: &str, session_id: &str) -> String {
        let enc = |v: &str| utf8_percent_encode(v, VALUE).to_string();
        self.0
            .replace("{kind}", &enc(kind.as_str()))
            .replace("{agent_id}", &enc(agent_id))
            .replace("{session_id}", &enc(session_id))
    }
}

#[cfg(test)]
mod tests;
