//! Where an agent lives once the record says: its Tool, the Tool's region and retention.

use crate::domain::{AgentRecord, Description, Retention, ToolRegistry};

/// Where an agent lives: its Tool, the Tool's region, and the Tool's retention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Home {
    pub tool_id: String,
    pub region: String,
    pub retention: Retention,
}

impl Home {
    /// The record's fields that say where the agent lives.
    pub fn description(&self) -> Description {
        Description {
            tool_id: Some(self.tool_id.clone()),
            region: Some(self.region.clone()),
            ..Description::default()
        }
    }
}

/// Where `record` says the agent lives: a Tool the registry knows as one of `key.kind`'s, and
/// its region (`None`: the record does not say, or names a Tool no longer deployed).
pub fn home_of(registry: &ToolRegistry, record: &AgentRecord) -> Option<Home> {
    let tool = record.description.tool_id.as_deref()?;
    let kind_tools = registry.kind(record.key.kind)?;
    let retention = if kind_tools.temporary.as_deref() == Some(tool) {
        Retention::Temporary
    } else if kind_tools.snapshot_tools().any(|t| t == tool) {
        Retention::Recoverable
    } else {
        return None;
    };
    Some(Home {
        tool_id: tool.to_string(),
        region: record.description.region.clone()?,
        retention,
    })
}
