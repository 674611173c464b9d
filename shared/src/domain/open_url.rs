//! `open_url`: where a person works with an awake agent, from the deployment's template
//! `SNAPWAKE_OPEN_URL` (docs/http-api.md, "The agent view"). Never the session's Endpoint: the
//! template is the studio's own page, which knows how to reach the sandbox.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::{AgentState, AgentView};

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
mod tests {
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
