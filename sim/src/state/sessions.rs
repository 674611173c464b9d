//! Session records: how a stored session reads (status, liveness, AgentKit view), and how
//! sessions enter and leave the world with their per-Tool and expiry indexes kept in step.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::{index_insert, index_remove, ns, std_to_time, World};
use crate::clock::format_ts;
use crate::pagination::Key;
use snapwake::agentkit::types::{self, MetadataEntry};
use snapwake::secret::Secret;

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

impl World {
    pub(crate) fn insert_session(&mut self, s: SessRec) {
        index_insert(&mut self.sessions_by_tool, &s.tool_id, s.key());
        self.expiries.insert((ns(s.expire_at), s.id.clone()));
        self.sessions.insert(s.id.clone(), s);
    }

    pub(crate) fn remove_session(&mut self, id: &str) -> Option<SessRec> {
        let s = self.sessions.remove(id)?;
        index_remove(&mut self.sessions_by_tool, &s.tool_id, &s.key());
        self.expiries.remove(&(ns(s.expire_at), s.id.clone()));
        Some(s)
    }

    /// Start a new session on `tool_id` (CreateSession, ResumeSessionFromSnapshot).
    pub(crate) fn start_session(
        &mut self,
        tool_id: &str,
        user_session_id: Option<String>,
        metadata: Vec<MetadataEntry>,
        ttl: time::Duration,
        now: OffsetDateTime,
    ) -> SessRec {
        let id = self.fresh_id("sess");
        // A session told to get stuck stays `Starting` until a test moves it on.
        let stuck = self.stuck_sessions > 0;
        if stuck {
            self.stuck_sessions -= 1;
        }
        let s = SessRec {
            endpoint: self.endpoint_for(&id),
            id,
            tool_id: tool_id.to_string(),
            user_session_id,
            created_at: now,
            ready_at: now + std_to_time(self.session_ready_delay),
            expire_at: now + ttl,
            fixed_status: stuck.then(|| "Starting".to_string()),
            metadata,
        };
        self.insert_session(s.clone());
        s
    }

    /// Give a session a status of its own (`Some`: it sticks, any string), or hand it back to
    /// its lifecycle (`None`). `false`: no such session.
    pub(crate) fn set_session_status(&mut self, id: &str, status: Option<String>) -> bool {
        match self.sessions.get_mut(id) {
            Some(s) => {
                s.fixed_status = status;
                true
            }
            None => false,
        }
    }

    /// Move a session's expiry (SetSessionTtl): the expiry index follows.
    pub(crate) fn set_expiry(&mut self, id: &str, expire_at: OffsetDateTime) -> Option<SessRec> {
        let mut s = self.remove_session(id)?;
        s.expire_at = expire_at;
        self.insert_session(s.clone());
        Some(s)
    }

    /// How many active sessions each UserSessionId has.
    pub(crate) fn live_per_usid(&self, now: OffsetDateTime) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for s in self.sessions.values() {
            if let (Some(u), true) = (&s.user_session_id, s.is_active(now)) {
                *out.entry(u.clone()).or_insert(0) += 1;
            }
        }
        out
    }
}
