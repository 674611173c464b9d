//! The steps that bring one Tool to what its catalogue entry wants (a pure comparison).

use crate::reconcile::catalogue::Entry;
use snapwake::agentkit::types::{EnvVar, Tool};

#[derive(Clone, PartialEq, Eq)]
pub enum Step {
    CreateTool,
    /// UpdateTool `{EnableSnapshot: true}`.
    EnableSnapshots,
    /// UpdateTool `{Envs}` with the full merged list.
    SetEnvs(Vec<EnvVar>),
    /// Poll GetTool until Ready (and snapshots on, for a recoverable Tool).
    AwaitReady,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

impl Step {
    /// As the report shows it: env keys, never values.
    pub fn label(&self) -> String {
        match self {
            Step::CreateTool => "create_tool".into(),
            Step::EnableSnapshots => "enable_snapshots".into(),
            Step::SetEnvs(envs) => {
                let keys: Vec<&str> = envs.iter().map(|e| e.key.as_str()).collect();
                format!("set_envs({})", keys.join(","))
            }
            Step::AwaitReady => "await_ready".into(),
        }
    }

    pub fn is_write(&self) -> bool {
        !matches!(self, Step::AwaitReady)
    }
}

/// The steps that make `tool` as `entry` wants, or why it cannot be used.
pub fn resolve(entry: &Entry, tool: &Tool) -> Result<Vec<Step>, String> {
    let id = tool.tool_id.as_deref().unwrap_or_default();
    if tool.is_failed() {
        return Err(format!(
            "Tool {id} is {}",
            tool.status.as_deref().unwrap_or_default()
        ));
    }
    if let Some(tt) = tool.tool_type.as_deref() {
        if tt != entry.tool_type {
            return Err(format!(
                "Tool {id} has ToolType {tt}; the catalogue wants {}",
                entry.tool_type
            ));
        }
    }
    let mut steps = Vec::new();
    if entry.recoverable && tool.enable_snapshot != Some(true) {
        steps.push(Step::EnableSnapshots);
    }
    if let Some(envs) = merged_envs(&tool.envs, &entry.envs.0) {
        steps.push(Step::SetEnvs(envs));
    }
    if !steps.is_empty() || !tool.is_ready() {
        steps.push(Step::AwaitReady);
    }
    Ok(steps)
}

/// The Tool's `Envs` with the desired ones set, or `None` when they already are.
pub fn merged_envs(current: &[EnvVar], desired: &[EnvVar]) -> Option<Vec<EnvVar>> {
    let changed = desired
        .iter()
        .any(|d| !current.iter().any(|c| c.key == d.key && c.value == d.value));
    if !changed {
        return None;
    }
    let mut merged: Vec<EnvVar> = current
        .iter()
        .filter(|c| !desired.iter().any(|d| d.key == c.key))
        .cloned()
        .collect();
    merged.extend(desired.iter().cloned());
    Some(merged)
}
