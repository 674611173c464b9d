//! The simulated world: Tools, sessions and snapshots, their indexes, and their lifecycles.
//!
//! Lifecycles are evaluated lazily: readiness is derived from the clock when an object is read
//! (`Creating` until its `ready_at`), and expiry is applied by [`World::tick`], which every
//! request and every control call runs first. No background task is needed, and a jump of the
//! simulated clock takes effect at the next call.
//!
//! Listings are ordered by `(CreatedAt, id)` through `BTreeSet` indexes per Tool (and for
//! snapshots per UserSessionId too, so listing one owner among 20,000 snapshots does not scan
//! them all).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::clock::format_ts;
use super::error::SimError;
use super::pagination::Key;
use snapwake::agentkit::types::{self, EnvVar, MetadataEntry, SESSION_TTL_S};

/// The `Reason` of a snapshot taken at expiry.
pub const REASON_EXPIRED: &str = "Expired";
/// The `Reason` of a snapshot taken on request (CreateSessionSnapshot).
pub const REASON_MANUAL: &str = "Manual";

pub(crate) fn ns(t: OffsetDateTime) -> i128 {
    t.unix_timestamp_nanos()
}

fn std_to_time(d: Duration) -> time::Duration {
    time::Duration::try_from(d).unwrap_or(time::Duration::MAX)
}

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

#[derive(Clone, Debug)]
pub(crate) struct SessRec {
    pub(crate) id: String,
    pub(crate) tool_id: String,
    pub(crate) user_session_id: Option<String>,
    pub(crate) created_at: OffsetDateTime,
    pub(crate) ready_at: OffsetDateTime,
    pub(crate) expire_at: OffsetDateTime,
    pub(crate) fixed_status: Option<String>,
    pub(crate) endpoint: String,
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

/// A Tool to seed. Absent fields take the defaults noted.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SeedTool {
    /// Explicit id; default a fresh `t-…`.
    pub tool_id: Option<String>,
    /// Name (required, non-empty).
    pub name: String,
    /// ToolType, e.g. `CodeEnv` (required, non-empty).
    pub tool_type: String,
    /// Default `default`.
    pub project_name: Option<String>,
    /// Recoverable (`true`) or temporary (`false`, the default).
    pub enable_snapshot: bool,
    /// Default `Ready` now; `Creating` becomes `Ready` after the current tool ready delay; any
    /// other status (e.g. `CreateFailed`) sticks.
    pub status: Option<String>,
    /// Environment variables.
    pub envs: Vec<EnvVar>,
}

/// A session to seed on an existing Tool.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SeedSession {
    /// The Tool (any region; the session lives in the Tool's region).
    pub tool_id: String,
    /// Explicit id; default a fresh `sess-…`.
    pub session_id: Option<String>,
    /// The agent id.
    pub user_session_id: Option<String>,
    /// Default `Ready`; `Creating` becomes `Ready` after the current session ready delay from
    /// `created_at`; any other status (e.g. `Failed`) sticks until the session expires.
    pub status: Option<String>,
    /// Default now (simulated). RFC 3339 in JSON.
    #[serde(with = "ts_opt")]
    pub created_at: Option<OffsetDateTime>,
    /// Lifetime in seconds from `created_at`; default 28800. An `ExpireAt` already past makes
    /// the session expire at once (a snapshot on a recoverable Tool).
    pub ttl_secs: Option<u64>,
    /// `{Key, Type, Value}` entries (PascalCase in JSON, as on the wire).
    pub metadata: Vec<MetadataEntry>,
}

/// A snapshot to seed on an existing Tool.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SeedSnapshot {
    /// The Tool (any region).
    pub tool_id: String,
    /// Explicit id; default a fresh `snap-…`.
    pub snapshot_id: Option<String>,
    /// The source session.
    pub session_id: Option<String>,
    /// The agent id (absent for a snapshot of a session created without one).
    pub user_session_id: Option<String>,
    /// Default none.
    pub sandbox_id: Option<String>,
    /// Default `Ready`.
    pub status: Option<String>,
    /// Default `Expired`.
    pub reason: Option<String>,
    /// Default now (simulated). RFC 3339 in JSON.
    #[serde(with = "ts_opt")]
    pub created_at: Option<OffsetDateTime>,
    /// Becomes the Metadata of every session resumed from it.
    pub session_metadata: Vec<MetadataEntry>,
    /// Default none.
    pub snapshot_type: Option<String>,
}

/// `Option<OffsetDateTime>` as an RFC 3339 string (the `time` crate's serde feature is off).
mod ts_opt {
    use serde::{Deserialize, Deserializer, Serializer};
    use time::OffsetDateTime;

    pub(super) fn serialize<S: Serializer>(
        t: &Option<OffsetDateTime>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&super::format_ts(*t)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<OffsetDateTime>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(s) => super::super::clock::parse_ts(&s)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom("expected an RFC 3339 timestamp")),
        }
    }
}

fn index_insert(index: &mut HashMap<String, BTreeSet<Key>>, by: &str, key: Key) {
    index.entry(by.to_string()).or_default().insert(key);
}

fn index_remove(index: &mut HashMap<String, BTreeSet<Key>>, by: &str, key: &Key) {
    if let Some(set) = index.get_mut(by) {
        set.remove(key);
        if set.is_empty() {
            index.remove(by);
        }
    }
}

/// Everything the simulated AgentKit holds.
#[derive(Debug)]
pub(crate) struct World {
    pub(crate) tools: HashMap<String, ToolRec>,
    pub(crate) tools_by_region: HashMap<String, BTreeSet<Key>>,
    pub(crate) sessions: HashMap<String, SessRec>,
    pub(crate) sessions_by_tool: HashMap<String, BTreeSet<Key>>,
    /// `(expire_at ns, session id)`, so [`World::tick`] only touches what expires.
    expiries: BTreeSet<Key>,
    pub(crate) snapshots: HashMap<String, SnapRec>,
    pub(crate) snapshots_by_tool: HashMap<String, BTreeSet<Key>>,
    pub(crate) snapshots_by_usid: HashMap<String, BTreeSet<Key>>,
    pub(crate) session_ready_delay: Duration,
    pub(crate) tool_ready_delay: Duration,
    /// How long a snapshot taken on request stays `Creating`.
    pub(crate) snapshot_ready_delay: Duration,
    /// The status a snapshot taken on request reaches after the delay (`Ready`, or a failure
    /// to test with).
    pub(crate) snapshot_outcome: String,
    /// Resumes per snapshot id (kept after the snapshot is deleted).
    pub(crate) resumes: BTreeMap<String, u64>,
    ids: StdRng,
}

impl World {
    pub(crate) fn new(
        seed: u64,
        session_ready_delay: Duration,
        tool_ready_delay: Duration,
    ) -> Self {
        World {
            tools: HashMap::new(),
            tools_by_region: HashMap::new(),
            sessions: HashMap::new(),
            sessions_by_tool: HashMap::new(),
            expiries: BTreeSet::new(),
            snapshots: HashMap::new(),
            snapshots_by_tool: HashMap::new(),
            snapshots_by_usid: HashMap::new(),
            session_ready_delay,
            tool_ready_delay,
            snapshot_ready_delay: Duration::ZERO,
            snapshot_outcome: "Ready".into(),
            resumes: BTreeMap::new(),
            ids: StdRng::seed_from_u64(seed),
        }
    }

    /// Apply every expiry due by `now`: a session on a recoverable Tool that was still active
    /// becomes a `Ready` snapshot (`Reason: Expired`, CreatedAt = its ExpireAt); otherwise it
    /// vanishes. Whether the Tool is recoverable is read when the expiry is applied.
    pub(crate) fn tick(&mut self, now: OffsetDateTime) {
        let now_ns = ns(now);
        while let Some(first) = self.expiries.first() {
            if first.0 > now_ns {
                break;
            }
            let Some((_, id)) = self.expiries.pop_first() else {
                break;
            };
            let Some(s) = self.remove_session(&id) else {
                continue;
            };
            let recoverable = self
                .tools
                .get(&s.tool_id)
                .is_some_and(|t| t.enable_snapshot);
            if recoverable && s.is_active(s.expire_at) {
                let snap = SnapRec {
                    id: self.fresh_id("snap"),
                    session_id: Some(s.id.clone()),
                    user_session_id: s.user_session_id.clone(),
                    sandbox_id: Some(format!("sbx-{}", s.id.trim_start_matches("sess-"))),
                    tool_id: s.tool_id.clone(),
                    status: "Ready".into(),
                    ready_at: None,
                    reason: Some(REASON_EXPIRED.into()),
                    created_at: s.expire_at,
                    metadata: s.metadata,
                    snapshot_type: None,
                };
                tracing::debug!(session = %s.id, snapshot = %snap.id, "sim: session expired into a snapshot");
                self.insert_snapshot(snap);
            } else {
                tracing::debug!(session = %s.id, "sim: session expired");
            }
        }
    }

    /// A fresh id `prefix-<12 hex>` unused by any object (repeatable for one seed).
    pub(crate) fn fresh_id(&mut self, prefix: &str) -> String {
        loop {
            let id = format!("{prefix}-{:012x}", self.ids.gen::<u64>() & 0xffff_ffff_ffff);
            if !self.id_taken(&id) {
                return id;
            }
        }
    }

    fn id_taken(&self, id: &str) -> bool {
        self.tools.contains_key(id)
            || self.sessions.contains_key(id)
            || self.snapshots.contains_key(id)
    }

    /// A fake session endpoint carrying an auth query string, like the real one.
    pub(crate) fn endpoint_for(&mut self, session_id: &str) -> String {
        let a: u128 = self.ids.gen();
        format!("https://{session_id}.sandbox.example/?auth={a:032x}")
    }

    pub(crate) fn insert_tool(&mut self, t: ToolRec) {
        index_insert(&mut self.tools_by_region, &t.region, t.key());
        self.tools.insert(t.id.clone(), t);
    }

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
        let s = SessRec {
            endpoint: self.endpoint_for(&id),
            id,
            tool_id: tool_id.to_string(),
            user_session_id,
            created_at: now,
            ready_at: now + std_to_time(self.session_ready_delay),
            expire_at: now + ttl,
            fixed_status: None,
            metadata,
        };
        self.insert_session(s.clone());
        s
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

    fn explicit_id(&mut self, given: Option<String>, prefix: &str) -> Result<String, SimError> {
        match given {
            Some(id) if id.is_empty() => Err(SimError::invalid("an explicit id must not be empty")),
            Some(id) if self.id_taken(&id) => {
                Err(SimError::invalid(format!("id {id} is already taken")))
            }
            Some(id) => Ok(id),
            None => Ok(self.fresh_id(prefix)),
        }
    }

    pub(crate) fn seed_tool(
        &mut self,
        region: &str,
        t: SeedTool,
        now: OffsetDateTime,
    ) -> Result<String, SimError> {
        if t.name.is_empty() || t.tool_type.is_empty() {
            return Err(SimError::invalid(
                "a seeded Tool needs a name and a tool_type",
            ));
        }
        let id = self.explicit_id(t.tool_id, "t")?;
        let (ready_at, fixed_status) = match t.status.as_deref() {
            None => (now, None),
            Some(s) if s.eq_ignore_ascii_case("ready") => (now, None),
            Some(s) if s.eq_ignore_ascii_case("creating") => {
                (now + std_to_time(self.tool_ready_delay), None)
            }
            Some(s) => (now, Some(s.to_string())),
        };
        self.insert_tool(ToolRec {
            id: id.clone(),
            region: region.to_string(),
            name: t.name,
            tool_type: t.tool_type,
            project_name: t.project_name.unwrap_or_else(|| "default".into()),
            enable_snapshot: t.enable_snapshot,
            envs: t.envs,
            created_at: now,
            ready_at,
            fixed_status,
        });
        Ok(id)
    }

    pub(crate) fn seed_session(
        &mut self,
        s: SeedSession,
        now: OffsetDateTime,
    ) -> Result<String, SimError> {
        if !self.tools.contains_key(&s.tool_id) {
            return Err(SimError::not_found(format!("no Tool {}", s.tool_id)));
        }
        let id = self.explicit_id(s.session_id, "sess")?;
        let created_at = s.created_at.unwrap_or(now);
        let ttl = s.ttl_secs.unwrap_or(SESSION_TTL_S);
        let ttl = time::Duration::seconds(i64::try_from(ttl).unwrap_or(i64::MAX / 1_000_000_000));
        let (ready_at, fixed_status) = match s.status.as_deref() {
            None => (created_at, None),
            Some(st) if st.eq_ignore_ascii_case("ready") => (created_at, None),
            Some(st) if st.eq_ignore_ascii_case("creating") => {
                (created_at + std_to_time(self.session_ready_delay), None)
            }
            Some(st) => (created_at, Some(st.to_string())),
        };
        let rec = SessRec {
            endpoint: self.endpoint_for(&id),
            id: id.clone(),
            tool_id: s.tool_id,
            user_session_id: s.user_session_id,
            created_at,
            ready_at,
            expire_at: created_at.checked_add(ttl).unwrap_or(created_at),
            fixed_status,
            metadata: s.metadata,
        };
        self.insert_session(rec);
        self.tick(now);
        Ok(id)
    }

    pub(crate) fn seed_snapshot(
        &mut self,
        s: SeedSnapshot,
        now: OffsetDateTime,
    ) -> Result<String, SimError> {
        if !self.tools.contains_key(&s.tool_id) {
            return Err(SimError::not_found(format!("no Tool {}", s.tool_id)));
        }
        let id = self.explicit_id(s.snapshot_id, "snap")?;
        self.insert_snapshot(SnapRec {
            id: id.clone(),
            session_id: s.session_id,
            user_session_id: s.user_session_id,
            sandbox_id: s.sandbox_id,
            tool_id: s.tool_id,
            status: s.status.unwrap_or_else(|| "Ready".into()),
            ready_at: None,
            reason: Some(s.reason.unwrap_or_else(|| REASON_EXPIRED.into())),
            created_at: s.created_at.unwrap_or(now),
            metadata: s.session_metadata,
            snapshot_type: s.snapshot_type,
        });
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn world_with_tool(recoverable: bool) -> (World, String, OffsetDateTime) {
        let mut w = World::new(1, Duration::ZERO, Duration::ZERO);
        let now = datetime!(2026-12-02 10:00:00 UTC);
        let t = w
            .seed_tool(
                "cn-beijing",
                SeedTool {
                    name: "n".into(),
                    tool_type: "CodeEnv".into(),
                    enable_snapshot: recoverable,
                    ..Default::default()
                },
                now,
            )
            .unwrap();
        (w, t, now)
    }

    #[test]
    fn expiry_on_a_recoverable_tool_leaves_a_snapshot_and_indexes_it() {
        let (mut w, t, now) = world_with_tool(true);
        let meta = vec![MetadataEntry::string("Username", "alice")];
        let s = w.start_session(
            &t,
            Some("u-1".into()),
            meta.clone(),
            time::Duration::hours(1),
            now,
        );
        w.tick(now + time::Duration::minutes(59));
        assert!(w.sessions.contains_key(&s.id));
        w.tick(now + time::Duration::hours(2));
        assert!(w.sessions.is_empty() && w.sessions_by_tool.is_empty());
        let snap = w.snapshots.values().next().unwrap();
        assert_eq!(snap.session_id.as_deref(), Some(s.id.as_str()));
        assert_eq!(snap.created_at, s.expire_at);
        assert_eq!(snap.metadata, meta);
        assert_eq!(w.snapshots_by_usid["u-1"].len(), 1);
        let id = snap.id.clone();
        w.remove_snapshot(&id).unwrap();
        assert!(w.snapshots_by_usid.is_empty() && w.snapshots_by_tool.is_empty());
    }

    #[test]
    fn expiry_on_a_temporary_tool_leaves_nothing() {
        let (mut w, t, now) = world_with_tool(false);
        w.start_session(
            &t,
            Some("u-1".into()),
            vec![],
            time::Duration::hours(1),
            now,
        );
        w.tick(now + time::Duration::hours(2));
        assert!(w.sessions.is_empty() && w.snapshots.is_empty());
    }

    #[test]
    fn ids_are_unique_and_repeatable_for_a_seed() {
        let mut a = World::new(5, Duration::ZERO, Duration::ZERO);
        let mut b = World::new(5, Duration::ZERO, Duration::ZERO);
        assert_eq!(a.fresh_id("x"), b.fresh_id("x"));
        assert!(a.explicit_id(Some(String::new()), "x").is_err());
    }
}
