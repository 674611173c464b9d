//! The index sync (docs/operations.md, "The owner index"): every agent AgentKit knows (a snapshot
//! on a snapshot Tool, or a live session) gets an agent record with its owner, description,
//! snapshot summaries and, at rest, live session, so one owner's list is a query of the owner
//! index. The list function trusts the index only for the Tools a completed full sync covered
//! ([`INDEX_DOCUMENT`]).
//!
//! Writes are conditional and fill only what is missing (what snapwake recorded wins), so a second
//! sync writes nothing. A `Username` in metadata is taken as the owner only when the UserSessionId
//! agrees ([`crate::identity::belongs_to`]): metadata is free text; a record's owner grants access.

mod freshness;
mod listing;
mod slices;
mod status;
mod sync;
mod upsert;

pub use freshness::{freshness, save_freshness, Freshness, ToolMark, REFRESH_DOCUMENT};
pub use listing::{agent_of, agents_of, list_tool, tools, Seen, ToolListing, MAX_SYNC_PAGES};
pub use slices::{snapshots_between, SliceSettings, SlicedRead, ORIGIN_S};
pub use status::{index_status, record_completion, IndexStatus, INDEX_DOCUMENT};
pub use sync::{sync_index, IndexSyncReport};
pub(crate) use upsert::learned_end;
pub use upsert::{index_agent, index_located, index_many, Upsert};

#[cfg(test)]
mod tests;
