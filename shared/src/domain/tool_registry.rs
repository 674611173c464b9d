//! The tool registry: which AgentKit Tool serves each kind and retention. Deploy writes it (CAS
//! on `version`); everything else reads it through `crate::locate::RegistryCache`.
//!
//! `open_url`: where a person works with an awake agent, from the deployment's template
//! `SNAPWAKE_OPEN_URL` (docs/http-api.md, "The agent view"). Never the session's Endpoint: the
//! template is the studio's own page, which knows how to reach the sandbox.

use super::{AgentState, AgentView};
use super::{Kind, Retention};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

    /// The link of `view`: only while it is awake with a session.
    pub fn for_view(&self, view: &AgentView) -> Option<String> {
        let session = view
            .session
            .as_ref()
            .filter(|_| view.state == AgentState::Awake)?;
        let enc = |v: &str| utf8_percent_encode(v, VALUE).to_string();
        Some(
            self.0
                .replace("{kind}", &enc(view.kind.as_str()))
                .replace("{agent_id}", &enc(&view.agent_id))
                .replace("{session_id}", &enc(&session.session_id)),
        )
    }
}

#[cfg(test)]
mod open_url_tests {
    use super::*;
    use crate::domain::{Kind, Retention, SessionView};

    fn view(state: AgentState, session: Option<&str>) -> AgentView {
        AgentView {
            kind: Kind::Codex,
            agent_id: "studio-alice-0f3c".into(),
            display_name: "Data helper".into(),
            owner: Some("alice".into()),
            created_by: None,
            retention: Retention::Recoverable,
            state,
            session: session.map(|id| SessionView {
                session_id: id.into(),
                status: Some("Ready".into()),
                created_at: None,
                expire_at: None,
            }),
            snapshots: Vec::new(),
            wake: None,
            etag: None,
            as_of: None,
            open_url: None,
            schedule: None,
        }
    }

    #[test]
    fn an_awake_agent_gets_the_template_filled_in_and_encoded() {
        let t =
            OpenUrl::parse("https://studio.example/a/{kind}/{agent_id}?s={session_id}").unwrap();
        assert_eq!(
            t.for_view(&view(AgentState::Awake, Some("s 1/x")))
                .as_deref(),
            Some("https://studio.example/a/codex/studio-alice-0f3c?s=s%201%2Fx")
        );
        // Not awake, or no session: no link.
        assert_eq!(t.for_view(&view(AgentState::Asleep, None)), None);
        assert_eq!(t.for_view(&view(AgentState::Starting, Some("s1"))), None);
        assert_eq!(t.for_view(&view(AgentState::Awake, None)), None);
    }

    #[test]
    fn only_http_templates_with_known_placeholders_are_accepted() {
        assert!(OpenUrl::parse("http://localhost:3000/{agent_id}").is_ok());
        for bad in [
            "ftp://x/{kind}",
            "studio.example/{kind}",
            "https://x/{endpoint}",
            "https://x/{kind",
        ] {
            assert!(OpenUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
