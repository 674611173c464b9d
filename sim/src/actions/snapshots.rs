//! The snapshot actions: ListSessionSnapshots, GetSessionSnapshot, CreateSessionSnapshot,
//! DeleteSessionSnapshot and ResumeSessionFromSnapshot.

use super::context::Ctx;
use super::listing::{cursor, range};
use super::params::{required, tool_here, ttl};
use crate::error::SimError;
use crate::pagination;
use crate::state::{SnapRec, World, REASON_MANUAL};
use snapwake::agentkit::types::*;

/// Snapshots of a Tool, oldest first, with optional exact `UserSessionId` and `SessionId`
/// filters (an empty string counts as absent) and `CreateTimeAfter` / `CreateTimeBefore` (RFC
/// 3339, both exclusive unless the control says inclusive; a malformed one is refused). The UserSessionId filter walks an index.
/// The order is the simulator's: AgentKit documents none, so callers never rely on it.
pub(super) fn list_session_snapshots(
    w: &mut World,
    cx: &Ctx<'_>,
    r: ListSessionSnapshots,
) -> Result<ListSessionSnapshotsResult, SimError> {
    let tool_id = tool_here(w, cx, &r.tool_id)?.id.clone();
    let size = pagination::page_size(r.max_results)?;
    let usid = r.user_session_id.filter(|u| !u.is_empty());
    let session_id = r.session_id.filter(|s| !s.is_empty());
    let after = instant("CreateTimeAfter", r.create_time_after.as_deref())?;
    let before = instant("CreateTimeBefore", r.create_time_before.as_deref())?;
    let inclusive = w.inclusive_time_filters;
    let u = format!("u:{}", usid.as_deref().unwrap_or(""));
    let s = format!("s:{}", session_id.as_deref().unwrap_or(""));
    let c = format!("c:{}", r.create_time_after.as_deref().unwrap_or(""));
    let b = format!("b:{}", r.create_time_before.as_deref().unwrap_or(""));
    let scope = pagination::scope(&["ListSessionSnapshots", cx.region, &tool_id, &u, &s, &c, &b]);
    let from = cursor(cx, &scope, r.next_token.as_deref())?;
    let index = match &usid {
        Some(u) => w.snapshots_by_usid.get(u),
        None => w.snapshots_by_tool.get(&tool_id),
    };
    let items = range(index, &from)
        .filter_map(|k| w.snapshots.get(&k.1).map(|s| (k, s)))
        .filter(|(_, s)| s.tool_id == tool_id)
        .filter(|(_, s)| session_id.is_none() || s.session_id == session_id)
        .filter(|(_, s)| after.is_none_or(|a| s.created_at > a || inclusive && s.created_at == a))
        .filter(|(_, s)| before.is_none_or(|b| s.created_at < b || inclusive && s.created_at == b))
        .filter(|(_, s)| s.is_visible(cx.now))
        .map(|(k, s)| (k.clone(), s.view(cx.now)));
    let (snapshots, next_token) = pagination::paginate(cx.tokens, &scope, size, items);
    Ok(ListSessionSnapshotsResult {
        snapshots,
        next_token,
    })
}

/// An optional RFC 3339 time filter (an empty string counts as absent; a malformed one is
/// refused).
fn instant(name: &str, value: Option<&str>) -> Result<Option<time::OffsetDateTime>, SimError> {
    match value.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => time::OffsetDateTime::parse(v, &time::format_description::well_known::Rfc3339)
            .map(Some)
            .map_err(|_| SimError::invalid(format!("{name} {v:?} is not RFC 3339"))),
    }
}

/// A NEW session from a `Ready` snapshot, every time (no de-duplication), with the snapshot's
/// UserSessionId and its SessionMetadata as Metadata; the snapshot stays. The Tool must be
/// `Ready` and the snapshot `Ready` (409 `InvalidResource.Status` otherwise). `Ttl` is in
/// seconds; `CreateNewInstance` is accepted and ignored.
pub(super) fn resume_session_from_snapshot(
    w: &mut World,
    cx: &Ctx<'_>,
    r: ResumeSessionFromSnapshot,
) -> Result<ResumeSessionFromSnapshotResult, SimError> {
    let tool = tool_here(w, cx, &r.tool_id)?;
    let tool_ready = tool.status(cx.now) == "Ready";
    required("SnapshotId", &r.snapshot_id)?;
    let snap = w
        .snapshots
        .get(&r.snapshot_id)
        .filter(|s| s.tool_id == r.tool_id && s.is_visible(cx.now))
        .ok_or_else(|| SimError::not_found(format!("snapshot {} not found", r.snapshot_id)))?;
    let status = snap.status(cx.now);
    if !status.eq_ignore_ascii_case("ready") {
        return Err(SimError::bad_status(format!(
            "snapshot {} is {status}, not Ready",
            r.snapshot_id
        )));
    }
    if !tool_ready {
        return Err(SimError::bad_status(format!(
            "Tool {} is not Ready",
            r.tool_id
        )));
    }
    let ttl = ttl(r.ttl, "second")?;
    let (usid, meta) = (snap.user_session_id.clone(), snap.metadata.clone());
    let s = w.start_session(&r.tool_id, usid, meta, ttl, cx.now);
    *w.resumes.entry(r.snapshot_id.clone()).or_insert(0) += 1;
    tracing::debug!(snapshot = %r.snapshot_id, session = %s.id, "sim: resumed");
    Ok(ResumeSessionFromSnapshotResult { session_id: s.id })
}

pub(super) fn delete_session_snapshot(
    w: &mut World,
    cx: &Ctx<'_>,
    r: DeleteSessionSnapshot,
) -> Result<DeleteSessionSnapshotResult, SimError> {
    let tool_id = tool_here(w, cx, &r.tool_id)?.id.clone();
    required("SnapshotId", &r.snapshot_id)?;
    if w.snapshots.get(&r.snapshot_id).map(|s| &s.tool_id) != Some(&tool_id) {
        return Err(SimError::not_found(format!(
            "snapshot {} not found",
            r.snapshot_id
        )));
    }
    w.remove_snapshot(&r.snapshot_id);
    Ok(DeleteSessionSnapshotResult {
        snapshot_id: r.snapshot_id,
    })
}

/// A snapshot of a live session, now: `Creating` for the snapshot ready delay, then `Ready`
/// (or the failure status a test set),
/// with the session's UserSessionId and Metadata (as SessionMetadata), `Reason` `Manual`. The
/// session goes on. Refused on a Tool without `EnableSnapshot` (400 `OperationDenied`) and on
/// a session that is not active (409 `InvalidResource.Status`); an unknown session is
/// NotFound.
pub(super) fn create_session_snapshot(
    w: &mut World,
    cx: &Ctx<'_>,
    r: CreateSessionSnapshot,
) -> Result<CreateSessionSnapshotResult, SimError> {
    let tool = tool_here(w, cx, &r.tool_id)?;
    let snapshots_on = tool.enable_snapshot;
    let tool_id = tool.id.clone();
    required("SessionId", &r.session_id)?;
    let session = w
        .sessions
        .get(&r.session_id)
        .filter(|s| s.tool_id == tool_id)
        .ok_or_else(|| SimError::not_found(format!("session {} not found", r.session_id)))?;
    if !snapshots_on {
        return Err(SimError::new(
            400,
            "OperationDenied",
            format!("Tool {tool_id} does not enable snapshots"),
        ));
    }
    if !session.is_active(cx.now) {
        return Err(SimError::bad_status(format!(
            "session {} is {}, not active",
            r.session_id,
            session.status(cx.now)
        )));
    }
    let (usid, meta, source) = (
        session.user_session_id.clone(),
        session.metadata.clone(),
        session.id.clone(),
    );
    let id = w.fresh_id("snap");
    let ready_at =
        cx.now + time::Duration::try_from(w.snapshot_ready_delay).unwrap_or(time::Duration::MAX);
    w.insert_snapshot(SnapRec {
        id: id.clone(),
        session_id: Some(source.clone()),
        user_session_id: usid,
        sandbox_id: Some(format!("sbx-{}", source.trim_start_matches("sess-"))),
        tool_id,
        status: w.snapshot_outcome.clone(),
        ready_at: Some(ready_at),
        reason: Some(REASON_MANUAL.into()),
        created_at: cx.now,
        metadata: meta,
        snapshot_type: None,
        visible_at: None,
    });
    Ok(CreateSessionSnapshotResult {
        snapshot_id: id,
        status: Some("Creating".into()),
    })
}

/// The snapshot, if it exists on this Tool.
pub(super) fn get_session_snapshot(
    w: &mut World,
    cx: &Ctx<'_>,
    r: GetSessionSnapshot,
) -> Result<GetSessionSnapshotResult, SimError> {
    let tool_id = tool_here(w, cx, &r.tool_id)?.id.clone();
    required("SnapshotId", &r.snapshot_id)?;
    w.snapshots
        .get(&r.snapshot_id)
        .filter(|s| s.tool_id == tool_id && s.is_visible(cx.now))
        .map(|s| GetSessionSnapshotResult {
            snapshot: s.view(cx.now),
        })
        .ok_or_else(|| SimError::not_found(format!("snapshot {} not found", r.snapshot_id)))
}
