//! Planning (docs/agentkit.md, "Plan" and "Legacy single-Tool deployments"): read what AgentKit
//! has for every catalogue entry and decide the steps that make it as desired. Reads only.
//!
//! An explicit id is read with GetTool and never renamed or recreated; otherwise the Tool is found
//! by exact name, and more than one of a name fails the entry (an operator pins one).
//!
//! Legacy: a kind whose temporary entry has an explicit id and whose recoverable entry has none
//! keeps that id temporary, and a temporary Tool with snapshots on is recorded as a legacy
//! snapshot Tool. With `migrate_legacy`, or once the stored registry records that id as
//! recoverable (so a run without the flag does not undo it), the Tool becomes the recoverable one
//! and the temporary entry gets a new Tool by name.

use std::collections::BTreeMap;

use snapwake::agentkit::types::{Filter, GetTool, ListTools, Tool};
use snapwake::agentkit::{list_all, AgentKit, AgentKitError};
use snapwake::domain::{Kind, Retention, ToolRegistry};
use snapwake::error::Error;
use snapwake::invocation::Deadline;

use super::catalogue::{Catalogue, Entry, PROJECT_NAME};
use super::report::{EntryReport, EntryStatus};

mod resolve;

pub use resolve::{merged_envs, resolve, Step};

/// Pages of a ListTools-by-name read (a name matches few Tools).
const NAME_PAGES: usize = 5;

/// How the Tool of an entry was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Explicit,
    /// By name, and the registry already names it (or the entry has no registry slot).
    Registered,
    /// By name (or a re-purposed legacy Tool) not yet in the registry.
    Adopted,
    New,
}

#[derive(Clone, Debug)]
pub struct Planned {
    pub entry: Entry,
    /// Where the Tool lives (or will be created).
    pub region: String,
    pub tool_id: Option<String>,
    pub tool: Option<Tool>,
    pub origin: Origin,
    pub steps: Vec<Step>,
    pub failure: Option<String>,
    pub notes: Vec<String>,
}

impl Planned {
    /// The report line of a dry run.
    pub fn report(&self) -> EntryReport {
        let status = if self.failure.is_some() {
            EntryStatus::Failed
        } else if self.steps.contains(&Step::CreateTool) {
            EntryStatus::Created
        } else if self.steps.iter().any(Step::is_write) {
            EntryStatus::Updated
        } else if self.origin == Origin::Adopted {
            EntryStatus::Adopted
        } else if self.steps.contains(&Step::AwaitReady) {
            EntryStatus::Pending
        } else {
            EntryStatus::Unchanged
        };
        EntryReport {
            key: self.entry.key.clone(),
            kind: self.entry.kind,
            retention: self.entry.retention(),
            name: self.entry.name.clone(),
            tool_id: self.tool_id.clone(),
            status,
            reason: self.failure.clone(),
            steps: self.steps.iter().map(Step::label).collect(),
            notes: self.notes.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Plan {
    /// The region Tools are created in and recorded with (the first configured one).
    pub region: String,
    pub entries: Vec<Planned>,
    pub warnings: Vec<String>,
    /// Per kind, temporary Tools that read `EnableSnapshot = true`: legacy snapshot Tools that
    /// stay in the registry whatever their snapshot count (new snapshots may still appear).
    pub snapshot_temporaries: BTreeMap<Kind, Vec<String>>,
}

enum Lookup {
    Explicit(Result<Option<(String, Tool)>, AgentKitError>),
    Named(Result<Vec<Tool>, AgentKitError>),
}

/// Read AgentKit and plan every entry of `catalogue`.
pub async fn plan<K: AgentKit>(
    agentkit: &K,
    catalogue: &Catalogue,
    previous: Option<&ToolRegistry>,
    migrate_legacy: bool,
    deadline: Deadline,
) -> Result<Plan, Error> {
    let region = agentkit
        .regions()
        .first()
        .cloned()
        .ok_or_else(|| Error::NotConfigured("no AgentKit region is configured".into()))?;
    let lookups = futures::future::join_all(catalogue.entries.iter().map(|e| {
        let region = region.clone();
        async move {
            match &e.tool_id {
                Some(id) => Lookup::Explicit(get_explicit(agentkit, id, deadline).await),
                None => Lookup::Named(find_by_name(agentkit, &region, &e.name, deadline).await),
            }
        }
    }))
    .await;

    let mut plan = Plan {
        region: region.clone(),
        entries: Vec::new(),
        warnings: Vec::new(),
        snapshot_temporaries: BTreeMap::new(),
    };
    for (entry, lookup) in catalogue.entries.iter().zip(lookups) {
        let planned = match lookup {
            Lookup::Explicit(found) => plan_explicit(entry, found, &region, &mut plan.warnings),
            Lookup::Named(found) => plan_named(entry, found, &region, previous),
        };
        plan.entries.push(planned);
    }

    for kind in Kind::ALL {
        legacy(
            agentkit,
            &mut plan,
            kind,
            previous,
            migrate_legacy,
            deadline,
        )
        .await;
    }
    Ok(plan)
}

async fn legacy<K: AgentKit>(
    agentkit: &K,
    plan: &mut Plan,
    kind: Kind,
    previous: Option<&ToolRegistry>,
    migrate_legacy: bool,
    deadline: Deadline,
) {
    let find = |plan: &Plan, retention: Retention| {
        plan.entries
            .iter()
            .position(|p| p.entry.kind == Some(kind) && p.entry.retention() == retention)
    };
    let (Some(t), Some(r)) = (
        find(plan, Retention::Temporary),
        find(plan, Retention::Recoverable),
    ) else {
        return;
    };
    let temp = plan.entries[t].clone();
    let is_legacy = temp.entry.tool_id.is_some() && plan.entries[r].entry.tool_id.is_none();
    let temp_tool = temp.tool.clone().filter(|_| temp.failure.is_none());
    let (Some(temp_id), Some(tool)) = (temp.tool_id.clone(), temp_tool) else {
        return;
    };
    let migrated_before = previous
        .and_then(|p| p.tool(kind, Retention::Recoverable))
        .is_some_and(|id| id == temp_id);
    let source = temp
        .entry
        .id_source
        .as_ref()
        .map_or_else(|| "configuration".to_string(), ToString::to_string);

    if is_legacy && (migrate_legacy || migrated_before) {
        // The old Tool becomes the recoverable one.
        let rec = &mut plan.entries[r];
        rec.tool_id = Some(temp_id.clone());
        rec.region = temp.region.clone();
        rec.tool = Some(tool.clone());
        rec.origin = if migrated_before {
            Origin::Registered
        } else {
            Origin::Adopted
        };
        let mut rec_entry = rec.entry.clone();
        rec_entry.tool_type = temp.entry.tool_type.clone();
        match resolve(&rec_entry, &tool) {
            Ok(steps) => rec.steps = steps,
            Err(why) => rec.failure = Some(why),
        }
        if !migrated_before {
            rec.notes.push(format!(
                "legacy Tool {temp_id} ({source}) adopted as the {kind} recoverable Tool{}",
                if tool.enable_snapshot == Some(true) {
                    " (snapshots already on)"
                } else {
                    " (snapshots will be switched on)"
                }
            ));
        }
        // A new temporary Tool, by name; never the old Tool itself.
        let named = find_by_name(agentkit, &plan.region, &temp.entry.name, deadline)
            .await
            .map(|tools| {
                tools
                    .into_iter()
                    .filter(|t| t.tool_id.as_deref() != Some(temp_id.as_str()))
                    .collect()
            });
        let mut entry = temp.entry.clone();
        entry.tool_id = None;
        entry.id_source = None;
        let mut new_temp = plan_named(&entry, named, &plan.region, previous);
        new_temp.notes.push(format!(
            "{kind} temporary Tool: {} by name {} (the legacy Tool {temp_id} is now recoverable)",
            if new_temp.origin == Origin::New {
                "a new Tool created"
            } else {
                "an existing Tool used"
            },
            entry.name
        ));
        if let Some(crate::reconcile::catalogue::IdSource::Env(var)) = &temp.entry.id_source {
            let msg = format!(
                "{var} still pins {temp_id} as the {kind} temporary Tool for the other functions: \
                 set SNAPWAKE_TOOL_{}_SNAPSHOT={temp_id} and remove {var}",
                kind.as_str().to_uppercase()
            );
            new_temp.notes.push(msg.clone());
            plan.warnings.push(msg);
        }
        plan.entries[t] = new_temp;
        return;
    }

    if tool.enable_snapshot == Some(true) {
        plan.snapshot_temporaries
            .entry(kind)
            .or_default()
            .push(temp_id.clone());
        let msg = if is_legacy {
            format!(
                "{kind}: the temporary Tool {temp_id} ({source}) has snapshots on; it stays \
                 temporary and is recorded as a legacy snapshot Tool (its snapshots stay listed \
                 and wakeable; no new agents are created there). Run with migrate_legacy to make \
                 it the recoverable Tool instead"
            )
        } else {
            format!(
                "{kind}: the temporary Tool {temp_id} has snapshots on; recorded as a legacy \
                 snapshot Tool"
            )
        };
        plan.entries[t].notes.push(msg.clone());
        plan.warnings.push(msg);
    }
}

fn plan_explicit(
    entry: &Entry,
    found: Result<Option<(String, Tool)>, AgentKitError>,
    region: &str,
    warnings: &mut Vec<String>,
) -> Planned {
    let id = entry.tool_id.clone();
    let source = entry
        .id_source
        .as_ref()
        .map_or_else(|| "configuration".to_string(), ToString::to_string);
    let mut planned = Planned {
        entry: entry.clone(),
        region: region.to_string(),
        tool_id: id.clone(),
        tool: None,
        origin: Origin::Explicit,
        steps: Vec::new(),
        failure: None,
        notes: Vec::new(),
    };
    match found {
        Ok(Some((tool_region, tool))) => {
            if tool_region != region {
                warnings.push(format!(
                    "{}: explicit Tool {} lives in {tool_region}, not {region}",
                    entry.key,
                    id.as_deref().unwrap_or_default()
                ));
            }
            planned.region = tool_region;
            match resolve(entry, &tool) {
                Ok(steps) => planned.steps = steps,
                Err(why) => planned.failure = Some(why),
            }
            planned.tool = Some(tool);
        }
        Ok(None) => {
            planned.failure = Some(format!(
                "explicit Tool {} ({source}) does not exist in any region; an explicit id is \
                 never recreated",
                id.as_deref().unwrap_or_default()
            ))
        }
        Err(e) => planned.failure = Some(format!("GetTool failed: {e}")),
    }
    planned
}

fn plan_named(
    entry: &Entry,
    found: Result<Vec<Tool>, AgentKitError>,
    region: &str,
    previous: Option<&ToolRegistry>,
) -> Planned {
    let mut planned = Planned {
        entry: entry.clone(),
        region: region.to_string(),
        tool_id: None,
        tool: None,
        origin: Origin::New,
        steps: Vec::new(),
        failure: None,
        notes: Vec::new(),
    };
    match found {
        Err(e) => planned.failure = Some(format!("ListTools failed: {e}")),
        Ok(tools) if tools.is_empty() => {
            planned.steps = vec![Step::CreateTool, Step::AwaitReady];
        }
        Ok(tools) if tools.len() > 1 => {
            let ids: Vec<&str> = tools.iter().filter_map(|t| t.tool_id.as_deref()).collect();
            planned.failure = Some(format!(
                "{} Tools are named {}: {}; pin one with SNAPWAKE_TOOL_{}",
                tools.len(),
                entry.name,
                ids.join(", "),
                entry.key.to_uppercase()
            ));
        }
        Ok(mut tools) => {
            let tool = tools.remove(0);
            let id = tool.tool_id.clone().unwrap_or_default();
            let registered = match entry.kind {
                None => true,
                Some(kind) => previous
                    .and_then(|p| p.tool(kind, entry.retention()))
                    .is_some_and(|r| r == id),
            };
            planned.origin = if registered {
                Origin::Registered
            } else {
                Origin::Adopted
            };
            match resolve(entry, &tool) {
                Ok(steps) => planned.steps = steps,
                Err(why) => planned.failure = Some(why),
            }
            planned.tool_id = Some(id);
            planned.tool = Some(tool);
        }
    }
    planned
}

/// The Tool `id` and its region, trying each configured region (`None`: in none of them).
pub async fn get_explicit<K: AgentKit>(
    agentkit: &K,
    id: &str,
    deadline: Deadline,
) -> Result<Option<(String, Tool)>, AgentKitError> {
    let request = GetTool {
        tool_id: id.to_string(),
    };
    for region in agentkit.regions() {
        match agentkit.call(region, &request, deadline).await {
            Ok(tool) => return Ok(Some((region.clone(), tool))),
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Tools in `region` whose name is exactly `name`.
pub async fn find_by_name<K: AgentKit>(
    agentkit: &K,
    region: &str,
    name: &str,
    deadline: Deadline,
) -> Result<Vec<Tool>, AgentKitError> {
    let request = ListTools {
        project_name: PROJECT_NAME.to_string(),
        filters: Some(vec![Filter::one("Name", name)]),
        ..ListTools::default()
    };
    let tools = list_all(agentkit, region, request, NAME_PAGES, deadline).await?;
    Ok(tools
        .into_iter()
        .filter(|t| t.name.as_deref() == Some(name))
        .collect())
}

#[cfg(test)]
mod tests;
