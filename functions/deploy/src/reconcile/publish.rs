//! The registry item a run writes (docs/agentkit.md, "Registry, lock and report"), CAS on its
//! version. A Tool is recorded once Ready; until then the slot keeps the previous Tool, which
//! functions go on using. A Tool that stops being a kind's recoverable Tool stays in
//! `legacy_snapshot_tools` until it has no snapshot left, so no snapshot is lost from sight;
//! temporary Tools with snapshots on stay there unconditionally.

use std::collections::BTreeMap;

use snapwake::agentkit::types::ListSessionSnapshots;
use snapwake::agentkit::AgentKit;
use snapwake::domain::{Kind, KindTools, Retention, ToolRegistry};
use snapwake::invocation::Deadline;

use super::apply::Applied;
use super::plan::Plan;

/// The registry after a run.
pub async fn next_registry<K: AgentKit>(
    agentkit: &K,
    previous: Option<&ToolRegistry>,
    plan: &Plan,
    applied: &[Applied],
    deadline: Deadline,
    notes: &mut Vec<String>,
) -> ToolRegistry {
    let mut next = ToolRegistry {
        kinds: BTreeMap::new(),
        region: Some(plan.region.clone()),
        version: previous.map_or(0, |p| p.version),
    };
    for kind in Kind::ALL {
        let before = previous
            .and_then(|p| p.kind(kind))
            .cloned()
            .unwrap_or_default();
        let done = |retention: Retention| {
            plan.entries
                .iter()
                .zip(applied)
                .find(|(p, a)| {
                    p.entry.kind == Some(kind) && p.entry.retention() == retention && a.ready
                })
                .and_then(|(_, a)| a.report.tool_id.clone())
        };
        let temporary = done(Retention::Temporary).or(before.temporary.clone());
        let recoverable = done(Retention::Recoverable).or(before.recoverable.clone());
        let always: Vec<String> = plan
            .snapshot_temporaries
            .get(&kind)
            .cloned()
            .unwrap_or_default();
        let mut candidates: Vec<String> = before.legacy_snapshot_tools.clone();
        candidates.extend(before.recoverable.clone());
        candidates.extend(always.iter().cloned());
        let mut legacy: Vec<String> = Vec::new();
        for c in candidates {
            if Some(&c) == recoverable.as_ref() || legacy.contains(&c) {
                continue;
            }
            if always.contains(&c) || has_snapshots(agentkit, &plan.region, &c, deadline).await {
                legacy.push(c);
            } else {
                notes.push(format!(
                    "{kind}: Tool {c} has no snapshot left; no longer a legacy snapshot Tool"
                ));
            }
        }
        let tools = KindTools {
            temporary,
            recoverable,
            legacy_snapshot_tools: legacy,
        };
        if tools != KindTools::default() {
            next.kinds.insert(kind, tools);
        }
    }
    next
}

/// Whether `tool_id` still holds a snapshot: one page of one. A Tool gone from every region
/// holds none; an error keeps it (never lose sight of a snapshot on a hiccup).
async fn has_snapshots<K: AgentKit>(
    agentkit: &K,
    first_region: &str,
    tool_id: &str,
    deadline: Deadline,
) -> bool {
    let request = ListSessionSnapshots {
        tool_id: tool_id.to_string(),
        max_results: Some(1),
        ..ListSessionSnapshots::default()
    };
    let mut regions = vec![first_region.to_string()];
    regions.extend(
        agentkit
            .regions()
            .iter()
            .filter(|r| *r != first_region)
            .cloned(),
    );
    for region in regions {
        match agentkit.call(&region, &request, deadline).await {
            Ok(page) => return !page.snapshots.is_empty() || page.next_token.is_some(),
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                tracing::warn!(tool = tool_id, error = %e, "cannot count snapshots; keeping the Tool");
                return true;
            }
        }
    }
    false
}

/// Whether two registries say the same (the version aside).
pub fn same_content(a: &ToolRegistry, b: &ToolRegistry) -> bool {
    a.kinds == b.kinds && a.region == b.region
}
