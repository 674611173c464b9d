//! How snapshots enter and leave the world, their per-Tool and per-UserSessionId indexes kept
//! in step.

use super::records::SnapRec;
use super::world::{index_insert, index_remove, World};

impl World {
    pub(crate) fn insert_snapshot(&mut self, s: SnapRec) {
        index_insert(&mut self.snapshots_by_tool, &s.tool_id, s.key());
        if let Some(u) = &s.user_session_id {
            index_insert(&mut self.snapshots_by_usid, u, s.key());
        }
        self.snapshots.insert(s.id.clone(), s);
    }

    pub(crate) fn remove_snapshot(&mut self, id: &str) -> Option<SnapRec> {
        let s = self.snapshots.remove(id)?;
        index_remove(&mut self.snapshots_by_tool, &s.tool_id, &s.key());
        if let Some(u) = &s.user_session_id {
            index_remove(&mut self.snapshots_by_usid, u, &s.key());
        }
        Some(s)
    }
}
