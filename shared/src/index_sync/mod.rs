//! The index sync (docs/operations.md, "The owner index"): make sure every agent AgentKit
//! knows — with a snapshot on a snapshot Tool, or a live session on any Tool — has an agent
//! record carrying its owner key, owner, display name, Tool, region, retention and
//! `created_at`, its snapshot summaries, and (for an agent at rest) its live session. Then
//! `GET /v1/agents` for one owner is a query of the owner index plus one exact AgentKit call
//! per agent, and an admin's page of everyone is read from the table alone. Once a full sync
//! has completed it records so in the [`INDEX_DOCUMENT`] (`status.rs`); the list function trusts the index
//! only then (and only for the Tools that sync covered).
//!
//! Writes are conditional only: a record is read first, then created with
//! [`Condition::Absent`] or filled with `Version(seen)`. Only descriptive fields that are
//! missing are written (what snapwake already recorded, e.g. the owner a create wrote, wins);
//! the snapshot summaries are replaced when they differ; a live session is written only on a
//! record at rest (asleep, failed, awake with another session, or none) and never while a
//! lock is held; deleted agents are left alone. A record that already says everything is not
//! written at all, so a second sync writes nothing.
//!
//! The `Username` metadata of a snapshot or session is taken as the agent's raw owner only
//! when the UserSessionId agrees ([`crate::identity::belongs_to`]): metadata is free text
//! another system may have written, and a record's owner grants access.
//!
//! The retention sweep (the delete function) lists each Tool once with [`list_tool`] and
//! indexes its agents with [`index_agent`] before pruning them; [`sync_index`] is the sync
//! alone over every Tool.

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
