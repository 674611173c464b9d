//! The Tool actions: ListTools, GetTool, CreateTool and UpdateTool.

use super::context::Ctx;
use super::listing::{cursor, filter_values, range};
use super::params::{required, tool_here};
use crate::error::SimError;
use crate::pagination;
use crate::state::{ToolRec, World};
use snapwake::agentkit::types::*;

/// The region's Tools, oldest first, of `ProjectName` (an empty ProjectName lists every
/// project). `Filters` may only be `Name` (exact, any-of).
pub(super) fn list_tools(
    w: &mut World,
    cx: &Ctx<'_>,
    r: ListTools,
) -> Result<ListToolsResult, SimError> {
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

pub(super) fn get_tool(w: &mut World, cx: &Ctx<'_>, r: GetTool) -> Result<Tool, SimError> {
    Ok(tool_here(w, cx, &r.tool_id)?.view(cx.now))
}

/// A new Tool in the request's region, `Creating` for the tool ready delay, then `Ready`.
/// `Name` and `ToolType` are required, `CpuMilli` and `MemoryMb` must be positive; an empty
/// `ProjectName` means `default`. Names are not unique (as ids are the key): a deploy that
/// creates twice makes two Tools, which a test can see by listing.
pub(super) fn create_tool(
    w: &mut World,
    cx: &Ctx<'_>,
    r: CreateTool,
) -> Result<CreateToolResult, SimError> {
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
pub(super) fn update_tool(w: &mut World, cx: &Ctx<'_>, r: UpdateTool) -> Result<Empty, SimError> {
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
