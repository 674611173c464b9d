//! Seeding: the public [`SeedTool`], [`SeedSession`] and [`SeedSnapshot`] a test or the
//! control surface hands in, and how [`World`] turns each into a record, defaults filled in.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::records::{std_to_time, SessRec, SnapRec, ToolRec, REASON_EXPIRED};
use super::world::World;
use crate::error::SimError;
use snapwake::agentkit::types::{EnvVar, MetadataEntry, SESSION_TTL_S};

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

impl SeedTool {
    /// A `CodeEnv` Tool named `name`, recoverable when `enable_snapshot`, the rest default.
    pub fn code_env(name: impl Into<String>, enable_snapshot: bool) -> SeedTool {
        SeedTool {
            name: name.into(),
            tool_type: "CodeEnv".into(),
            enable_snapshot,
            ..SeedTool::default()
        }
    }
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

    use crate::clock::{format_ts, parse_ts};

    pub(super) fn serialize<S: Serializer>(
        t: &Option<OffsetDateTime>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&format_ts(*t)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<OffsetDateTime>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(s) => parse_ts(&s)
                .map(Some)
                .ok_or_else(|| serde::de::Error::custom("expected an RFC 3339 timestamp")),
        }
    }
}

impl World {
    /// `pub(super)` so the unit tests of `state` reach it.
    pub(super) fn explicit_id(
        &mut self,
        given: Option<String>,
        prefix: &str,
    ) -> Result<String, SimError> {
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
            visible_at: None,
        });
        Ok(id)
    }
}
