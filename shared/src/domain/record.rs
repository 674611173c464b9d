//! The agent record: snapwake's own memory of an agent (owner, how to show it) and its wake
//! lock (docs/wake-protocol.md). AgentKit stays the truth about sessions and snapshots.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::agent::SnapshotView;
use super::key::AgentKey;
use super::kind::Retention;

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
            version: 0,
            updated_at: None,
            expires_at: None,
            started_by: None,
            announced: None,
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
