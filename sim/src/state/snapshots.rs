//! Snapshot records: how a stored snapshot reads (status, AgentKit view), and how snapshots
//! enter and leave the world with their per-Tool and per-UserSessionId indexes kept in step.

use time::OffsetDateTime;

use super::{index_insert, index_remove, ns, World};
use crate::clock::format_ts;
use crate::pagination::Key;
use snapwake::agentkit::types::{self, MetadataEntry};

/// The `Reason` of a snapshot taken at expiry.
pub const REASON_EXPIRED: &str = "Expired";
/// The `Reason` of a snapshot taken on request (CreateSessionSnapshot).
pub const REASON_MANUAL: &str = "Manual";

#[derive(Clone, Debug)]
pub(crate) struct SnapRec {
    pub(crate) id: String,
    pub(crate) session_id: Option<String>,
    pub(crate) user_session_id: Option<String>,
    pub(crate) sandbox_id: Option<String>,
    pub(crate) tool_id: String,
    /// The status once Ready-able: `Ready` (or a seeded status that sticks).
    pub(crate) status: String,
    /// A snapshot taken on request is `Creating` until then.
    pub(crate) ready_at: Option<OffsetDateTime>,
    pub(crate) reason: Option<String>,
    pub(crate) created_at: OffsetDateTime,
    pub(crate) metadata: Vec<MetadataEntry>,
    pub(crate) snapshot_type: Option<String>,
    /// An expiry snapshot may be missing from listings (and GetSessionSnapshot) until then.
    pub(crate) visible_at: Option<OffsetDateTime>,
}

impl SnapRec {
    pub(crate) fn key(&self) -> Key {
        (ns(self.created_at), self.id.clone())
    }

    pub(crate) fn status(&self, now: OffsetDateTime) -> &str {
        match self.ready_at {
            Some(t) if now < t => "Creating",
            _ => &self.status,
        }
    }

    /// Whether AgentKit shows it yet (listings, GetSessionSnapshot, Resume).
    pub(crate) fn is_visible(&self, now: OffsetDateTime) -> bool {
        self.visible_at.is_none_or(|t| now >= t)
    }

    pub(crate) fn view(&self, now: OffsetDateTime) -> types::Snapshot {
        types::Snapshot {
            snapshot_id: Some(self.id.clone()),
            session_id: self.session_id.clone(),
            user_session_id: self.user_session_id.clone(),
            sandbox_id: self.sandbox_id.clone(),
            tool_id: Some(self.tool_id.clone()),
            status: Some(self.status(now).to_string()),
            reason: self.reason.clone(),
            created_at: Some(format_ts(self.created_at)),
            session_metadata: self.metadata.clone(),
            snapshot_type: self.snapshot_type.clone(),
        }
    }
}

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
