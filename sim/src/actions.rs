//! One function per AgentKit action, over the [`World`], and the table that dispatches to them.
//!
//! Each function receives the typed request of `types.rs` and the request's context (its
//! region, the simulated now, the token signer) and answers the typed result or a
//! [`SimError`]. Choices where the spec is silent are written on each function.

use std::ops::Bound;

use serde_json::Value;
use time::OffsetDateTime;

use super::error::SimError;
use super::pagination::{self, Key, Tokens};
use super::state::{ToolRec, World};
use snapwake::agentkit::types::*;

/// What a request runs in.
pub(crate) struct Ctx<'a> {
    /// The credential-scope region.
    pub(crate) region: &'a str,
    pub(crate) now: OffsetDateTime,
    pub(crate) tokens: &'a Tokens,
}

fn required(field: &str, value: &str) -> Result<(), SimError> {
    if value.is_empty() {
        Err(SimError::invalid(format!("{field} is required")))
    } else {
        Ok(())
    }
}

/// The Tool, if it exists in the request's region: a Tool of another region is NotFound, as in
/// AgentKit, so a client's region fallback can be tested.
fn tool_here<'w>(w: &'w World, cx: &Ctx<'_>, tool_id: &str) -> Result<&'w ToolRec, SimError> {
    required("ToolId", tool_id)?;
    w.tools
        .get(tool_id)
        .filter(|t| t.region == cx.region)
        .ok_or_else(|| {
            SimError::not_found(format!("Tool {tool_id} not found in region {}", cx.region))
        })
}

/// The start of a listing: after the token's key, or from the beginning.
fn cursor(cx: &Ctx<'_>, scope: &str, token: Option<&str>) -> Result<Bound<Key>, SimError> {
    match token.filter(|t| !t.is_empty()) {
        None => Ok(Bound::Unbounded),
        Some(t) => Ok(Bound::Excluded(cx.tokens.open(scope, t)?)),
    }
}

fn range<'s>(
    set: Option<&'s std::collections::BTreeSet<Key>>,
    from: &Bound<Key>,
) -> impl Iterator<Item = &'s Key> {
    let from = from.clone();
    set.into_iter()
        .flat_map(move |s| s.range((from.clone(), Bound::Unbounded)))
}

/// `Ttl` × `TtlUnit` (`second`, `minute` or `hour`, case-insensitive) as a duration > 0.
fn ttl(ttl: u64, unit: &str) -> Result<time::Duration, SimError> {
    let per = match unit.to_ascii_lowercase().as_str() {
        "second" | "seconds" | "s" => 1,
        "minute" | "minutes" | "m" => 60,
        "hour" | "hours" | "h" => 3600,
        _ => return Err(SimError::invalid("TtlUnit must be second, minute or hour")),
    };
    let secs = ttl
        .checked_mul(per)
        .and_then(|s| i64::try_from(s).ok())
        .filter(|s| *s > 0 && *s <= 10 * 365 * 86_400)
        .ok_or_else(|| SimError::invalid("Ttl must be positive and at most 10 years"))?;
    Ok(time::Duration::seconds(secs))
}

// ---------------------------------------------------------------------------------------------
// Sessions

/// The value sets of `{Name, Values}` filters that may only name `allowed`, each sorted and
/// de-duplicated (any-of within a filter, all-of across filters), in a canonical order so a
/// NextToken can be tied to them.
fn filter_values(
    filters: Option<Vec<Filter>>,
    action: &str,
    allowed: &str,
) -> Result<Vec<Vec<String>>, SimError> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for f in filters.unwrap_or_default() {
        if f.name != allowed {
            return Err(SimError::invalid(format!(
                "unknown {action} filter {}",
                f.name
            )));
        }
        if f.values.is_empty() {
            return Err(SimError::invalid("a filter needs at least one value"));
        }
        let mut v = f.values;
        v.sort();
        v.dedup();
        out.push(v);
    }
    out.sort();
    Ok(out)
}

/// Sessions of a Tool that still exist, oldest first. `Metadata` filters must all match
/// (exact key and value); each `Filters` entry must be `UserSessionId` with non-empty
/// `Values`, matched any-of (several entries are ANDed). Another filter name is refused.
fn list_sessions(
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
fn get_session(w: &mut World, cx: &Ctx<'_>, r: GetSession) -> Result<Session, SimError> {
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
fn create_session(
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
fn delete_session(w: &mut World, cx: &Ctx<'_>, r: DeleteSession) -> Result<Empty, SimError> {
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

// ---------------------------------------------------------------------------------------------
// Snapshots

/// Snapshots of a Tool, oldest first, with optional exact `UserSessionId` and `SessionId`
/// filters (an empty string counts as absent). The UserSessionId filter walks an index.
fn list_session_snapshots(
    w: &mut World,
    cx: &Ctx<'_>,
    r: ListSessionSnapshots,
) -> Result<ListSessionSnapshotsResult, SimError> {
    let tool_id = tool_here(w, cx, &r.tool_id)?.id.clone();
    let size = pagination::page_size(r.max_results)?;
    let usid = r.user_session_id.filter(|u| !u.is_empty());
    let session_id = r.session_id.filter(|s| !s.is_empty());
    let u = format!("u:{}", usid.as_deref().unwrap_or(""));
    let s = format!("s:{}", session_id.as_deref().unwrap_or(""));
    let scope = pagination::scope(&["ListSessionSnapshots", cx.region, &tool_id, &u, &s]);
    let from = cursor(cx, &scope, r.next_token.as_deref())?;
    let index = match &usid {
        Some(u) => w.snapshots_by_usid.get(u),
        None => w.snapshots_by_tool.get(&tool_id),
    };
    let items = range(index, &from)
        .filter_map(|k| w.snapshots.get(&k.1).map(|s| (k, s)))
        .filter(|(_, s)| s.tool_id == tool_id)
        .filter(|(_, s)| session_id.is_none() || s.session_id == session_id)
        .map(|(k, s)| (k.clone(), s.view(cx.now)));
    let (snapshots, next_token) = pagination::paginate(cx.tokens, &scope, size, items);
    Ok(ListSessionSnapshotsResult {
        snapshots,
        next_token,
    })
}

/// A NEW session from a `Ready` snapshot, every time (no de-duplication), with the snapshot's
/// UserSessionId and its SessionMetadata as Metadata; the snapshot stays. The Tool must be
/// `Ready` and the snapshot `Ready` (409 `InvalidResource.Status` otherwise). `Ttl` is in
/// seconds; `CreateNewInstance` is accepted and ignored.
fn resume_session_from_snapshot(
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
        .filter(|s| s.tool_id == r.tool_id)
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

fn delete_session_snapshot(
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
fn create_session_snapshot(
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
    w.insert_snapshot(super::state::SnapRec {
        id: id.clone(),
        session_id: Some(source.clone()),
        user_session_id: usid,
        sandbox_id: Some(format!("sbx-{}", source.trim_start_matches("sess-"))),
        tool_id,
        status: w.snapshot_outcome.clone(),
        ready_at: Some(ready_at),
        reason: Some(super::state::REASON_MANUAL.into()),
        created_at: cx.now,
        metadata: meta,
        snapshot_type: None,
    });
    Ok(CreateSessionSnapshotResult {
        snapshot_id: id,
        status: Some("Creating".into()),
    })
}

/// The snapshot, if it exists on this Tool.
fn get_session_snapshot(
    w: &mut World,
    cx: &Ctx<'_>,
    r: GetSessionSnapshot,
) -> Result<GetSessionSnapshotResult, SimError> {
    let tool_id = tool_here(w, cx, &r.tool_id)?.id.clone();
    required("SnapshotId", &r.snapshot_id)?;
    w.snapshots
        .get(&r.snapshot_id)
        .filter(|s| s.tool_id == tool_id)
        .map(|s| GetSessionSnapshotResult {
            snapshot: s.view(cx.now),
        })
        .ok_or_else(|| SimError::not_found(format!("snapshot {} not found", r.snapshot_id)))
}

/// The session lives `Ttl`×`TtlUnit` more from now (its `ExpireAt` moves, earlier or later);
/// an ended or unknown session is NotFound.
fn set_session_ttl(
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
        expire_at: Some(super::clock::format_ts(s.expire_at)),
        session_id: Some(s.id),
        tool_id: Some(tool_id),
    })
}

// ---------------------------------------------------------------------------------------------
// Tools

/// The region's Tools, oldest first, of `ProjectName` (an empty ProjectName lists every
/// project). `Filters` may only be `Name` (exact, any-of).
fn list_tools(w: &mut World, cx: &Ctx<'_>, r: ListTools) -> Result<ListToolsResult, SimError> {
    let size = pagination::page_size(r.max_results)?;
    let names = filter_values(r.filters, "ListTools", "Name")?;
    let p = format!("p:{}", r.project_name);
    let mut parts = vec!["ListTools", cx.region, p.as_str()];
    let joined: Vec<String> = names
        .iter()
        .map(|v| format!("n:{}", v.join("\u{0}")))
        .collect();
    parts.extend(joined.iter().map(String::as_str));
    let scope = pagination::scope(&parts);
    let from = cursor(cx, &scope, r.next_token.as_deref())?;
    let items = range(w.tools_by_region.get(cx.region), &from)
        .filter_map(|k| w.tools.get(&k.1).map(|t| (k, t)))
        .filter(|(_, t)| r.project_name.is_empty() || t.project_name == r.project_name)
        .filter(|(_, t)| names.iter().all(|vals| vals.contains(&t.name)))
        .map(|(k, t)| (k.clone(), t.view(cx.now)));
    let (tools, next_token) = pagination::paginate(cx.tokens, &scope, size, items);
    Ok(ListToolsResult { tools, next_token })
}

fn get_tool(w: &mut World, cx: &Ctx<'_>, r: GetTool) -> Result<Tool, SimError> {
    Ok(tool_here(w, cx, &r.tool_id)?.view(cx.now))
}

/// A new Tool in the request's region, `Creating` for the tool ready delay, then `Ready`.
/// `Name` and `ToolType` are required, `CpuMilli` and `MemoryMb` must be positive; an empty
/// `ProjectName` means `default`. Names are not unique (as ids are the key): a deploy that
/// creates twice makes two Tools, which a test can see by listing.
fn create_tool(w: &mut World, cx: &Ctx<'_>, r: CreateTool) -> Result<CreateToolResult, SimError> {
    required("Name", &r.name)?;
    required("ToolType", &r.tool_type)?;
    if r.cpu_milli == 0 || r.memory_mb == 0 {
        return Err(SimError::invalid("CpuMilli and MemoryMb must be positive"));
    }
    let id = w.fresh_id("t");
    let ready_at =
        cx.now + time::Duration::try_from(w.tool_ready_delay).unwrap_or(time::Duration::MAX);
    w.insert_tool(ToolRec {
        id: id.clone(),
        region: cx.region.to_string(),
        name: r.name,
        tool_type: r.tool_type,
        project_name: Some(r.project_name)
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "default".into()),
        enable_snapshot: r.enable_snapshot,
        envs: r.envs.unwrap_or_default(),
        created_at: cx.now,
        ready_at,
        fixed_status: None,
    });
    tracing::info!(tool = %id, region = cx.region, "sim: Tool created");
    Ok(CreateToolResult { tool_id: id })
}

/// Sets `EnableSnapshot` and/or replaces the whole `Envs` list; at least one is required.
fn update_tool(w: &mut World, cx: &Ctx<'_>, r: UpdateTool) -> Result<Empty, SimError> {
    tool_here(w, cx, &r.tool_id)?;
    if r.enable_snapshot.is_none() && r.envs.is_none() {
        return Err(SimError::invalid("nothing to update"));
    }
    if let Some(t) = w.tools.get_mut(&r.tool_id) {
        if let Some(e) = r.enable_snapshot {
            t.enable_snapshot = e;
        }
        if let Some(envs) = r.envs {
            t.envs = envs;
        }
    }
    Ok(Empty {})
}

// ---------------------------------------------------------------------------------------------
// Dispatch

fn call<A: Action>(
    w: &mut World,
    cx: &Ctx<'_>,
    body: &[u8],
    f: fn(&mut World, &Ctx<'_>, A) -> Result<A::Output, SimError>,
) -> Result<Value, SimError> {
    let req: A = serde_json::from_slice(body)
        .map_err(|e| SimError::invalid(format!("malformed {} request: {e}", A::NAME)))?;
    let out = f(w, cx, req)?;
    serde_json::to_value(out).map_err(|_| SimError::internal("could not encode the result"))
}

macro_rules! actions {
    ($($t:ty => $f:ident),* $(,)?) => {
        /// Every action: its name and whether it is a tool write (throttled).
        pub(crate) const ACTIONS: &[(&str, bool)] = &[$((<$t>::NAME, <$t>::IS_TOOL_WRITE)),*];

        /// Run the action `name` on `body` (JSON of its request type).
        pub(crate) fn run(
            name: &str,
            w: &mut World,
            cx: &Ctx<'_>,
            body: &[u8],
        ) -> Result<Value, SimError> {
            $(if name == <$t>::NAME {
                return call::<$t>(w, cx, body, $f);
            })*
            Err(SimError::new(400, "InvalidAction", "unknown action"))
        }
    };
}

actions! {
    ListSessions => list_sessions,
    GetSession => get_session,
    CreateSession => create_session,
    DeleteSession => delete_session,
    ListSessionSnapshots => list_session_snapshots,
    ResumeSessionFromSnapshot => resume_session_from_snapshot,
    DeleteSessionSnapshot => delete_session_snapshot,
    CreateSessionSnapshot => create_session_snapshot,
    GetSessionSnapshot => get_session_snapshot,
    SetSessionTtl => set_session_ttl,
    ListTools => list_tools,
    GetTool => get_tool,
    CreateTool => create_tool,
    UpdateTool => update_tool,
}

/// The action's static name and whether it is a tool write, if it is an action.
pub(crate) fn lookup(name: &str) -> Option<(&'static str, bool)> {
    ACTIONS.iter().copied().find(|(n, _)| *n == name)
}
