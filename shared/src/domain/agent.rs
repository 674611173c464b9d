//! An agent, in the order this file defines it:
//!
//! - the view: what the API says about one agent, from AgentKit's truth plus the record; it
//!   has no field that could hold a session `Endpoint` or a credential;
//! - the record: snapwake's own memory of an agent (owner, how to show it) and its wake lock
//!   (docs/wake-protocol.md); AgentKit stays the truth about sessions and snapshots;
//! - how AgentKit's session and snapshot statuses read, classified once here
//!   (docs/wake-protocol.md, "AgentKit keeps its own time"). Statuses are free strings in any
//!   case and the set is open: anything unrecognised is [`SessionPhase::Unknown`], "something is
//!   there, we do not know what", never mistaken for "no session".

use super::kind::{AgentKey, Kind, Retention};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The state a person sees (docs/http-api.md, "The agent view").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentState {
    Awake,
    Starting,
    Waking,
    /// No live session, at least one Ready snapshot.
    Asleep,
    Deleting,
    /// No live session and no Ready snapshot.
    Unavailable,
    Sleeping,
    /// The live session is in an undocumented status (raw in `session.status`): nothing is
    /// woken or created beside it.
    Unknown,
}

impl AgentState {
    pub const ALL: [AgentState; 8] = [
        AgentState::Awake,
        AgentState::Starting,
        AgentState::Waking,
        AgentState::Asleep,
        AgentState::Deleting,
        AgentState::Unavailable,
        AgentState::Sleeping,
        AgentState::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Awake => "awake",
            AgentState::Starting => "starting",
            AgentState::Waking => "waking",
            AgentState::Asleep => "asleep",
            AgentState::Deleting => "deleting",
            AgentState::Unavailable => "unavailable",
            AgentState::Sleeping => "sleeping",
            AgentState::Unknown => "unknown",
        }
    }
}

impl std::str::FromStr for AgentState {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AgentState::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            .ok_or_else(|| {
                "state must be one of awake, starting, waking, asleep, deleting, unavailable, sleeping, unknown".into()
            })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionView {
    pub session_id: String,
    pub status: Option<String>,
    pub created_at: Option<String>,
    pub expire_at: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotView {
    pub snapshot_id: String,
    pub source_session_id: Option<String>,
    pub status: Option<String>,
    pub reason: Option<String>,
    pub created_at: Option<String>,
}

/// The wake lock as the API shows it: `waking`, or `failed` with a code and snapwake's words
/// ([`super::failure`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeView {
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What went wrong, in snapwake's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// `SNAPSHOT_IN_PROGRESS` while a wake waits for AgentKit to save the last session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl WakeView {
    pub fn in_flight(state: &str, since: Option<String>, session_id: Option<String>) -> WakeView {
        WakeView {
            state: state.to_string(),
            since,
            session_id,
            error: None,
            error_code: None,
            reason: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentView {
    pub kind: Kind,
    pub agent_id: String,
    pub display_name: String,
    /// `None` for ownerless legacy agents.
    pub owner: Option<String>,
    pub created_by: Option<String>,
    pub retention: Retention,
    pub state: AgentState,
    pub session: Option<SessionView>,
    /// Newest first.
    pub snapshots: Vec<SnapshotView>,
    pub wake: Option<WakeView>,
    /// The agent record's version, quoted; absent when no record exists yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// When the record was last written (RFC 3339); only on views answered from the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// From `SNAPWAKE_OPEN_URL` while awake, else null. Never the session's Endpoint.
    #[serde(default)]
    pub open_url: Option<String>,
    #[serde(default)]
    pub schedule: Option<super::schedule::ScheduleView>,
    /// The owner's idle time in minutes (0: never); absent: the deployment's (docs/idle.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_minutes: Option<u32>,
    /// While awake (or its session starting): when idle sleep puts it to sleep unless it is
    /// used before (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_sleep_at: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WakeState {
    /// Nothing in flight (also what a missing record reads as).
    Asleep,
    Waking,
    Awake,
    /// The last resume failed; the agent is still wakeable.
    Failed,
    Deleting,
    /// Deleted: the tombstone answers 410 until it expires.
    Gone,
    /// A create holds the agent around CreateSession.
    Creating,
    /// A sleep holds the agent: snapshot, wait until it is Ready, end the session.
    Sleeping,
}

impl WakeState {
    pub fn as_str(self) -> &'static str {
        match self {
            WakeState::Asleep => "asleep",
            WakeState::Waking => "waking",
            WakeState::Awake => "awake",
            WakeState::Failed => "failed",
            WakeState::Deleting => "deleting",
            WakeState::Gone => "gone",
            WakeState::Creating => "creating",
            WakeState::Sleeping => "sleeping",
        }
    }

    /// States that hold the lock while their lease lives.
    pub fn is_held(self) -> bool {
        matches!(
            self,
            WakeState::Waking | WakeState::Deleting | WakeState::Creating | WakeState::Sleeping
        )
    }

    /// What a 409 says about the operation holding the agent in this state.
    pub fn holder_detail(self) -> &'static str {
        match self {
            WakeState::Waking => "a wake holds the agent",
            WakeState::Deleting => "a delete holds the agent",
            WakeState::Creating => "the agent is being created",
            WakeState::Sleeping => "the agent is being put to sleep",
            _ => "another operation holds the agent",
        }
    }
}

impl fmt::Display for WakeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WakeState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            WakeState::Asleep,
            WakeState::Waking,
            WakeState::Awake,
            WakeState::Failed,
            WakeState::Deleting,
            WakeState::Gone,
            WakeState::Creating,
            WakeState::Sleeping,
        ]
        .into_iter()
        .find(|w| w.as_str() == s)
        .ok_or_else(|| format!("unknown wake state {s:?}"))
    }
}

/// Who owns the agent, where it lives, how to show it: a `describe` write's `Some` fields win.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Description {
    pub owner: Option<String>,
    /// The owner index key derived from the UserSessionId (`None` for ownerless agents).
    pub owner_key: Option<String>,
    pub display_name: Option<String>,
    pub created_by: Option<String>,
    pub retention: Option<Retention>,
    pub tool_id: Option<String>,
    pub region: Option<String>,
    pub created_at: Option<String>,
}

impl Description {
    pub fn overlay(&mut self, other: &Description) {
        fn set<T: Clone>(mine: &mut Option<T>, theirs: &Option<T>) {
            if theirs.is_some() {
                mine.clone_from(theirs);
            }
        }
        set(&mut self.owner, &other.owner);
        set(&mut self.owner_key, &other.owner_key);
        set(&mut self.display_name, &other.display_name);
        set(&mut self.created_by, &other.created_by);
        set(&mut self.retention, &other.retention);
        set(&mut self.tool_id, &other.tool_id);
        set(&mut self.region, &other.region);
        set(&mut self.created_at, &other.created_at);
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRecord {
    pub key: AgentKey,
    pub description: Description,

    pub state: WakeState,
    /// Random token of the invocation holding the lock.
    pub holder: Option<String>,
    /// +1 on every acquire: a holder's writes are fenced by the value it acquired.
    pub fence: u64,
    pub lease_until_ms: u64,
    pub snapshot_id: Option<String>,
    pub session_id: Option<String>,
    /// AgentKit's `ExpireAt`: an `awake` record past it is known asleep without asking AgentKit.
    pub session_expire_at: Option<String>,
    /// AgentKit's `CreatedAt`, so an answer read from the record shows it as a listing would.
    pub session_created_at: Option<String>,
    /// When the recorded session was last seen active by AgentKit (epoch ms; 0: never).
    pub verified_at_ms: u64,
    /// When a Resume was (about to be) sent and its outcome is not known yet (epoch ms).
    pub resume_sent_at_ms: Option<u64>,
    /// When a create's CreateSession was (about to be) sent, outcome unknown (epoch ms). Until
    /// the readiness timeout after it, an empty listing is no proof: no second CreateSession.
    pub create_sent_at_ms: Option<u64>,
    /// Until when one caller polls AgentKit; the others watch the record (epoch ms; 0: nobody).
    pub poll_until_ms: u64,
    /// The poll lease's holder, a token new at every take: a same-millisecond loser learns it.
    pub poller: Option<String>,
    /// When the awaited AgentKit work began (epoch ms, 0: none): polls space out from there.
    pub awaited_since_ms: u64,
    pub error: Option<String>,
    /// The snapshots as last seen (newest first), for an admin page of everyone.
    pub snapshots: Vec<SnapshotView>,
    /// The schedule as views show it; the schedule item is the tick's truth.
    pub schedule: Option<super::schedule::ScheduleSummary>,
    /// The owner's idle time in minutes (0: never); `None`: the deployment's (docs/idle.md).
    pub idle_minutes: Option<u32>,
    /// When this awake agent becomes idle, unless used before (epoch ms): the idle index's key.
    pub idle_at_ms: Option<u64>,
    /// +1 on every write; the ETag.
    pub version: u64,
    pub updated_at: Option<String>,
    /// Epoch seconds after which the record reads as absent (tombstones, TTL).
    pub expires_at: Option<i64>,
    /// The trigger of the acquire that started the change holding (or last holding) the agent:
    /// the change is announced as its doing, whoever settles it.
    pub started_by: Option<super::event::Trigger>,
    /// The state change the last write was, if any: what the change stream announces.
    pub announced: Option<super::event::Announcement>,
    /// What the last announced change left, for usage (docs/usage.md).
    pub usage: Option<super::usage::UsageMark>,
}

impl AgentRecord {
    /// Where the agent rests: its state and what its last wake or sleep left. Wakes, sleeps and
    /// keepalives move it; writes that only describe or verify do not. SHA-256, so stable
    /// across builds: the ticks keep it on the schedule item (docs/schedules.md).
    pub fn rest_mark(&self) -> u64 {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        for part in [
            Some(self.state.as_str()),
            self.session_id.as_deref(),
            self.session_expire_at.as_deref(),
            self.snapshot_id.as_deref(),
        ] {
            hash.update(part.unwrap_or("").as_bytes());
            hash.update([0]);
        }
        let digest = hash.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first)
    }

    /// What a missing record reads as: asleep, version 0.
    pub fn absent(key: AgentKey) -> Self {
        AgentRecord {
            key,
            description: Description::default(),
            state: WakeState::Asleep,
            holder: None,
            fence: 0,
            lease_until_ms: 0,
            snapshot_id: None,
            session_id: None,
            session_expire_at: None,
            session_created_at: None,
            verified_at_ms: 0,
            resume_sent_at_ms: None,
            create_sent_at_ms: None,
            poll_until_ms: 0,
            poller: None,
            awaited_since_ms: 0,
            error: None,
            snapshots: Vec::new(),
            schedule: None,
            idle_minutes: None,
            idle_at_ms: None,
            version: 0,
            updated_at: None,
            expires_at: None,
            started_by: None,
            announced: None,
            usage: None,
        }
    }

    /// Whether the record has expired (TTL deletion is lazy, so reads must check).
    pub fn is_expired(&self, now_s: i64) -> bool {
        self.expires_at.is_some_and(|t| t < now_s)
    }

    pub fn etag(&self) -> String {
        format!("\"{}\"", self.version)
    }
}

const STARTING: [&str; 4] = ["creating", "starting", "initializing", "pending"];
const USABLE: [&str; 2] = ["ready", "running"];
const ENDED: [&str; 6] = [
    "failed",
    "error",
    "stopped",
    "terminated",
    "expired",
    "deleted",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionPhase {
    /// Creating, Starting, Initializing, Pending (or Ready/Running without an endpoint yet).
    Starting,
    Usable,
    /// Failed, Error, Stopped, Terminated, Expired, Deleted (and, by the caller, not found).
    Ended,
    /// A status outside the sets above (or none at all).
    Unknown,
}

impl SessionPhase {
    /// Classify `status` (any case); a Ready session without an endpoint is still starting.
    pub fn of(status: Option<&str>, has_endpoint: bool) -> SessionPhase {
        let Some(s) = status else {
            return SessionPhase::Unknown;
        };
        let is = |set: &[&str]| set.iter().any(|a| a.eq_ignore_ascii_case(s));
        if is(&USABLE) {
            if has_endpoint {
                SessionPhase::Usable
            } else {
                SessionPhase::Starting
            }
        } else if is(&STARTING) {
            SessionPhase::Starting
        } else if is(&ENDED) {
            SessionPhase::Ended
        } else {
            SessionPhase::Unknown
        }
    }

    /// Anything but ended, unknown included, may be running: never start another beside it.
    pub fn occupies(self) -> bool {
        self != SessionPhase::Ended
    }
}

pub fn is_session_active(status: Option<&str>) -> bool {
    SessionPhase::of(status, true).occupies()
}

pub fn is_session_usable(status: Option<&str>, has_endpoint: bool) -> bool {
    SessionPhase::of(status, has_endpoint) == SessionPhase::Usable
}

/// The `Reason` AgentKit gives the snapshot of a session its clock ended (compare in any case).
pub const REASON_EXPIRED: &str = "Expired";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotPhase {
    InProgress,
    Ready,
    /// `Failed` or `Error`: will never be Ready.
    Failed,
    Unknown,
}

impl SnapshotPhase {
    pub fn of(status: Option<&str>) -> SnapshotPhase {
        let Some(s) = status else {
            return SnapshotPhase::Unknown;
        };
        let is = |set: &[&str]| set.iter().any(|a| a.eq_ignore_ascii_case(s));
        if is(&["ready"]) {
            SnapshotPhase::Ready
        } else if is(&["creating", "pending"]) {
            SnapshotPhase::InProgress
        } else if is(&["failed", "error"]) {
            SnapshotPhase::Failed
        } else {
            SnapshotPhase::Unknown
        }
    }
}

pub fn is_snapshot_wakeable(status: Option<&str>) -> bool {
    SnapshotPhase::of(status) == SnapshotPhase::Ready
}

/// Still being made: a sleep waits on such a snapshot, and so does a wake whose newest it is.
pub fn is_snapshot_in_progress(status: Option<&str>) -> bool {
    SnapshotPhase::of(status) == SnapshotPhase::InProgress
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod session_tests;
