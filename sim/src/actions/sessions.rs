//! The session actions: ListSessions, GetSession, CreateSession, DeleteSession and
//! SetSessionTtl.

use super::context::Ctx;
use super::listing::{cursor, filter_values, range};
use super::params::{required, tool_here, ttl};
use crate::clock::format_ts;
use crate::error::SimError;
use crate::pagination;
use crate::state::World;
use snapwake::agentkit::types::*;

/// Sessions of a Tool that still exist, oldest first. `Metadata` filters must all match
/// (exact key and value); each `Filters` entry must be `UserSessionId` with non-empty
/// `Values`, matched any-of (several entries are ANDed). Another filter name is refused.
pub(super) fn list_sessions(
    w: &mut World,
    cx: &Ctx<'_>,
    r: ListSessions,
) -> Result<ListSessionsResult, SimError> {
    let tool = tool_here(w, cx, &r.tool_id)?;
    let size = pagination::page_size(r.max_results)?;
    let mut meta: Vec<(String, String)> = r
        .metadata
        .unwrap_or_default()
        .into_iter()
        .map(|m| (m.key, m.value))
        .collect();
    meta.sort();
    let filters = filter_values(r.filters, "ListSessions", "UserSessionId")?;
    let mut parts = vec![
        "ListSessions".to_string(),
        cx.region.into(),
        tool.id.clone(),
    ];
    parts.extend(meta.iter().map(|(k, v)| format!("m:{k}\u{0}{v}")));
    parts.extend(filters.iter().map(|v| format!("f:{}", v.join("\u{0}"))));
    let scope = pagination::scope(&parts.iter().map(String::as_str).collect::<Vec<_>>());
    let from = cursor(cx, &scope, r.next_token.as_deref())?;
    let tool_type = tool.tool_type.as_str();
    let items = range(w.sessions_by_tool.get(&tool.id), &from)
        .filter_map(|k| w.sessions.get(&k.1).map(|s| (k, s)))
        .filter(|(_, s)| {
            meta.iter()
                .all(|(k, v)| s.metadata.iter().any(|m| &m.key == k && &m.value == v))
        })
        .filter(|(_, s)| {
            filters.iter().all(|vals| {
                s.user_session_id
                    .as_ref()
                    .is_some_and(|u| vals.iter().any(|v| v == u))
            })
        })
        .map(|(k, s)| (k.clone(), s.view(cx.now, Some(tool_type))));
    let (session_infos, next_token) = pagination::paginate(cx.tokens, &scope, size, items);
    Ok(ListSessionsResult {
        session_infos,
        next_token,
    })
}

/// The session, if it exists on this Tool (NotFound otherwise, also once it expired).
pub(super) fn get_session(w: &mut World, cx: &Ctx<'_>, r: GetSession) -> Result<Session, SimError> {
    let tool = tool_here(w, cx, &r.tool_id)?;
    required("SessionId", &r.session_id)?;
    w.sessions
        .get(&r.session_id)
        .filter(|s| s.tool_id == tool.id)
        .map(|s| s.view(cx.now, Some(&tool.tool_type)))
        .ok_or_else(|| SimError::not_found(format!("session {} not found", r.session_id)))
}

/// A new session on a `Ready` Tool (409 `InvalidResource.Status` otherwise). It is `Creating`
/// for the session ready delay, then `Ready`; it expires `Ttl`×`TtlUnit` after creation. An
/// empty `UserSessionId` makes a session without one. No de-duplication by UserSessionId.
pub(super) fn create_session(
    w: &mut World,
    cx: &Ctx<'_>,
    r: CreateSession,
) -> Result<CreateSessionResult, SimError> {
    let tool = tool_here(w, cx, &r.tool_id)?;
    if tool.status(cx.now) != "Ready" {
        return Err(SimError::bad_status(format!(
            "Tool {} is not Ready",
            r.tool_id
        )));
    }
    let ttl = ttl(r.ttl, &r.ttl_unit)?;
    let usid = Some(r.user_session_id).filter(|u| !u.is_empty());
    let s = w.start_session(&r.tool_id, usid, r.metadata, ttl, cx.now);
    Ok(CreateSessionResult {
        session_id: s.id,
        endpoint: Some(s.endpoint),
        user_session_id: s.user_session_id,
    })
}

/// Ends the session at once; it leaves no snapshot (only expiry does).
pub(super) fn delete_session(
    w: &mut World,
    cx: &Ctx<'_>,
    r: DeleteSession,
) -> Result<Empty, SimError> {
    let tool_id = tool_here(w, cx, &r.tool_id)?.id.clone();
    required("SessionId", &r.session_id)?;
    if w.sessions.get(&r.session_id).map(|s| &s.tool_id) != Some(&tool_id) {
        return Err(SimError::not_found(format!(
            "session {} not found",
            r.session_id
        )));
    }
    w.remove_session(&r.session_id);
    Ok(Empty {})
}

/// The session lives `Ttl`×`TtlUnit` more from now (its `ExpireAt` moves, earlier or later);
/// an ended or unknown session is NotFound.
pub(super) fn set_session_ttl(
    w: &mut World,
    cx: &Ctx<'_>,
    r: SetSessionTtl,
) -> Result<SetSessionTtlResult, SimError> {
    let tool_id = tool_here(w, cx, &r.tool_id)?.id.clone();
    required("SessionId", &r.session_id)?;
    let ttl = ttl(r.ttl, &r.ttl_unit)?;
    let live = w
        .sessions
        .get(&r.session_id)
        .is_some_and(|s| s.tool_id == tool_id && s.is_active(cx.now));
    if !live {
        return Err(SimError::not_found(format!(
            "session {} not found",
            r.session_id
        )));
    }
    let s = w
        .set_expiry(&r.session_id, cx.now + ttl)
        .ok_or_else(|| SimError::not_found(format!("session {} not found", r.session_id)))?;
    Ok(SetSessionTtlResult {
        expire_at: Some(format_ts(s.expire_at)),
        session_id: Some(s.id),
        tool_id: Some(tool_id),
    })
}
