//! The objects the simulated AgentKit holds: a Tool, a session and a snapshot as stored, and
//! how each reads (status on the clock, the AgentKit view). How they enter and leave the world
//! is in the sibling of each kind.

use std::time::Duration;

use time::OffsetDateTime;

use crate::clock::format_ts;
use crate::pagination::Key;
use snapwake::agentkit::types::Secret;
use snapwake::agentkit::types::{self, EnvVar, MetadataEntry};

pub(crate) fn ns(t: OffsetDateTime) -> i128 {
    t.unix_timestamp_nanos()
}

pub(crate) fn std_to_time(d: Duration) -> time::Duration {
    time::Duration::try_from(d).unwrap_or(time::Duration::MAX)
}

/// A Tool as stored.
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

/// A session as stored.
#[derive(Clone, Debug)]
pub(crate) struct SessRec {
    pub(crate) id: String,
    pub(crate) tool_id: String,
    pub(crate) user_session_id: Option<String>,
    pub(crate) created_at: OffsetDateTime,
    pub(crate) ready_at: OffsetDateTime,
    pub(crate) expire_at: OffsetDateTime,
    pub(crate) fixed_status: Option<String>,
    pub(crate) endpoint: Secret,
    pub(crate) metadata: Vec<MetadataEntry>,
}

impl SessRec {
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

    pub(crate) fn is_active(&self, now: OffsetDateTime) -> bool {
        snapwake::domain::is_session_active(Some(self.status(now)))
    }

    pub(crate) fn view(&self, now: OffsetDateTime, tool_type: Option<&str>) -> types::Session {
        types::Session {
            session_id: Some(self.id.clone()),
            user_session_id: self.user_session_id.clone(),
            status: Some(self.status(now).to_string()),
            endpoint: Some(self.endpoint.clone()),
            created_at: Some(format_ts(self.created_at)),
            expire_at: Some(format_ts(self.expire_at)),
            tool_type: tool_type.map(str::to_string),
            metadata: self.metadata.clone(),
        }
    }
}

/// The `Reason` of a snapshot taken at expiry.
pub const REASON_EXPIRED: &str = "Expired";
/// The `Reason` of a snapshot taken on request (CreateSessionSnapshot).
pub const REASON_MANUAL: &str = "Manual";

/// A snapshot as stored.
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
