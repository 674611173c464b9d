//! What the other changes ask of an agent's Tool (a sleep, a keepalive, a listing, a sweep):
//! the session to end, and the snapshots nobody claims. Every
//! listing is re-checked against the agent's exact UserSessionId, as a wake's are.

use super::*;

/// Pages of a Tool's sessions read to find an orphan of a `snapshot-<id>` agent (a rare case).
const ORPHAN_PAGES: usize = 50;

/// The agent's active session: `recorded` while active, else the newest by UserSessionId.
pub async fn active_session<K: AgentKit>(
    agentkit: &K,
    home: &Home,
    key: &AgentKey,
    recorded: Option<&str>,
    deadline: Deadline,
) -> Result<Option<Session>, AgentKitError> {
    if let Some(id) = recorded {
        if let Some(s) = session(agentkit, home, id, deadline).await? {
            if s.is_active() {
                return Ok(Some(s));
            }
        }
    }
    match crate::identity::user_session_id(&key.agent_id) {
        Some(usid) => live_session(agentkit, home, usid, deadline).await,
        None => Ok(None),
    }
}

/// Sessions an unknown Resume of a `snapshot-<id>` agent may have started: active, without a
/// UserSessionId, created since the Resume (less `margin`), with the snapshot's metadata.
pub async fn orphans_of<K: AgentKit>(
    agentkit: &K,
    home: &Home,
    sent_at_ms: u64,
    margin_ms: u64,
    metadata: &[MetadataEntry],
    deadline: Deadline,
) -> Result<Vec<Session>, AgentKitError> {
    let req = ListSessions {
        tool_id: home.tool_id.clone(),
        max_results: Some(crate::agentkit::types::MAX_PAGE_SIZE),
        ..ListSessions::default()
    };
    let all = list_all(agentkit, &home.region, req, ORPHAN_PAGES, deadline).await?;
    let since = sent_at_ms.saturating_sub(margin_ms);
    Ok(all
        .into_iter()
        .filter(|s| s.is_active())
        .filter(|s| s.user_session_id.as_deref().is_none_or(str::is_empty))
        .filter(|s| {
            s.created_at
                .as_deref()
                .and_then(crate::ambient::epoch_ms)
                .is_some_and(|t| t >= since)
        })
        .filter(|s| {
            metadata
                .iter()
                .all(|m| metadata_value(&s.metadata, &m.key) == Some(m.value.as_str()))
        })
        .collect())
}
