//! Tool records: how a stored Tool reads (status, AgentKit view) and how it enters the world.

use time::OffsetDateTime;

use super::{index_insert, ns, World};
use crate::pagination::Key;
use snapwake::agentkit::types::{self, EnvVar};

#[derive(Clone, Debug)]
pub(crate) struct ToolRec {
    pub(crate) id: String,
    pub(crate) region: String,
    pub(crate) name: String,
    pub(crate) tool_type: String,
    pub(crate) project_name: String,
    pub(crate) enable_snapshot: bool,
    pub(crate) envs: Vec<EnvVar>,
    pub(crate) created_at: OffsetDateTime,
    pub(crate) ready_at: OffsetDateTime,
    /// A seeded status other than Creating/Ready sticks forever.
    pub(crate) fixed_status: Option<String>,
}

impl ToolRec {
    pub(crate) fn key(&self) -> Key {
        (ns(self.created_at), self.id.clone())
    }

    pub(crate) fn status(&self, now: OffsetDateTime) -> &str {
        match &self.fixed_status {
            Some(s) => s,
            None if now < self.ready_at => "Creating",
            None => "Ready",
        }
    }

    pub(crate) fn view(&self, now: OffsetDateTime) -> types::Tool {
        types::Tool {
            tool_id: Some(self.id.clone()),
            name: Some(self.name.clone()),
            tool_type: Some(self.tool_type.clone()),
            status: Some(self.status(now).to_string()),
            enable_snapshot: Some(self.enable_snapshot),
            envs: self.envs.clone(),
            project_name: Some(self.project_name.clone()),
        }
    }
}

impl World {
    pub(crate) fn insert_tool(&mut self, t: ToolRec) {
        index_insert(&mut self.tools_by_region, &t.region, t.key());
        self.tools.insert(t.id.clone(), t);
    }
}
