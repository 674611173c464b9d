//! How sessions enter and leave the world, their per-Tool and expiry indexes kept in step.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::records::{ns, std_to_time, SessRec};
use super::world::{index_insert, index_remove, World};
use snapwake::agentkit::types::MetadataEntry;

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
