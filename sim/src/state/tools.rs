//! How a Tool enters the world.

use super::records::ToolRec;
use super::world::{index_insert, World};

impl World {
    pub(crate) fn insert_tool(&mut self, t: ToolRec) {
        index_insert(&mut self.tools_by_region, &t.region, t.key());
        self.tools.insert(t.id.clone(), t);
    }
}
