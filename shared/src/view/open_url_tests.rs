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
        idle_minutes: None,
        idle_sleep_at: None,
    }
}

#[test]
fn an_awake_agent_gets_the_template_filled_in_and_encoded() {
    let t = OpenUrl::parse("https://studio.example/a/{kind}/{agent_id}?s={session_id}").unwrap();
    assert_eq!(
        open_link(&t, &view(AgentState::Awake, Some("s 1/x"))).as_deref(),
        Some("https://studio.example/a/codex/studio-alice-0f3c?s=s%201%2Fx")
    );
    // Not awake, or no session: no link.
    assert_eq!(open_link(&t, &view(AgentState::Asleep, None)), None);
    assert_eq!(open_link(&t, &view(AgentState::Starting, Some("s1"))), None);
    assert_eq!(open_link(&t, &view(AgentState::Awake, None)), None);
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
