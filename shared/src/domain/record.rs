//! The agent record: snapwake's own memory of an agent (who owns it, how to show it) and its
//! wake lock (docs/wake-protocol.md). AgentKit stays the truth about sessions and snapshots; the
//! record adds what AgentKit cannot say: who holds the agent right now, and which session a
//! wake in flight has started.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::agent::SnapshotView;
use super::key::AgentKey;
use super::kind::Retention;

/// The lock state of an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WakeState {
    /// Nothing in flight (also what a missing record reads as).
    Asleep,
    /// A resume holds the agent.
    Waking,
    /// The recorded session was seen Ready.
    Awake,
    /// The last resume failed; the agent is still wakeable.
    Failed,
    /// A delete holds the agent.
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

/// The descriptive fields of a record: who owns the agent, where it lives and how to show it.
/// What a write sets (`Changes::describe`) and what a holder learns; every `Some` field
/// overwrites the record's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Description {
    /// The raw owner id, when known.
    pub owner: Option<String>,
    /// The owner index key derived from the UserSessionId (`None` for ownerless agents).
    pub owner_key: Option<String>,
    pub display_name: Option<String>,
    pub created_by: Option<String>,
    pub retention: Option<Retention>,
    pub tool_id: Option<String>,
    pub region: Option<String>,
    /// RFC 3339.
    pub created_at: Option<String>,
}

impl Description {
    /// Write every field `other` has over this one's (what a `describe` write does).
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

/// Everything the table keeps about one agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRecord {
    pub key: AgentKey,
    /// Who owns the agent, where it lives and how to show it.
    pub description: Description,

    pub state: WakeState,
    /// Random token of the invocation holding the lock.
    pub holder: Option<String>,
    /// +1 on every acquire: a holder's writes are fenced by the value it acquired.
    pub fence: u64,
    pub lease_until_ms: u64,
    pub snapshot_id: Option<String>,
    pub session_id: Option<String>,
    /// When the recorded session ends (AgentKit's `ExpireAt`, RFC 3339), so an `awake` record
    /// whose session has expired is known asleep without asking AgentKit.
    pub session_expire_at: Option<String>,
    /// When the recorded session was created (AgentKit's `CreatedAt`, RFC 3339), so that an
    /// answer read from the record shows it as a listing would.
    pub session_created_at: Option<String>,
    /// When the recorded session was last seen active by AgentKit (epoch ms; 0: never).
    pub verified_at_ms: u64,
    /// When a Resume was (about to be) sent and its outcome is not known yet (epoch ms).
    pub resume_sent_at_ms: Option<u64>,
    /// When a create's CreateSession was (about to be) sent and it is not known yet whether
    /// AgentKit created the session (epoch ms). Until the readiness timeout after it, an
    /// empty listing is no proof, and no second CreateSession is sent for the agent.
    pub create_sent_at_ms: Option<u64>,
    /// Until when one caller polls AgentKit for this wake (the holder, or the winner of a poll
    /// lease); the others watch the record (epoch ms; 0: nobody).
    pub poll_until_ms: u64,
    /// Who holds the poll lease: a token new at every take, so a caller whose take lost to
    /// another written in the same millisecond is told it lost (docs/wake-protocol.md,
    /// "Short requests").
    pub poller: Option<String>,
    /// When the AgentKit work this record waits on began (a Resume answered, a snapshot asked
    /// for; epoch ms, 0: none): the pause between two polls of it grows from there
    /// (docs/wake-protocol.md, "Short requests").
    pub awaited_since_ms: u64,
    pub error: Option<String>,
    /// The agent's snapshots as snapwake last saw them (newest first): what an admin page of
    /// everyone shows without asking AgentKit. Kept current by every snapwake write that
    /// changes them (a wake's listing, a snapshot delete, the sweep).
    pub snapshots: Vec<SnapshotView>,
    /// The agent's schedule, as its views show it (docs/schedules.md); the schedule item is
    /// the tick's truth.
    pub schedule: Option<super::schedule::ScheduleSummary>,
    /// +1 on every write; the ETag.
    pub version: u64,
    pub updated_at: Option<String>,
    /// Epoch seconds after which the record reads as absent (tombstones, TTL).
    pub expires_at: Option<i64>,
    /// What set off the change that holds the agent, or last held it: the trigger of the
    /// invocation whose acquire started it. The change is announced as its doing, whoever
    /// settles it (a person's poll finishing a scheduled wake, a tick carrying a person's).
    pub started_by: Option<super::event::Trigger>,
    /// The state change the last write was, if it was one (`crate::store::Changes::announce`):
    /// what the change stream's consumer announces for this version.
    pub announced: Option<super::event::Announcement>,
}

impl AgentRecord {
    /// A mark of where the agent rests: its state and what its last wake or sleep left (the
    /// session, its expiry, the snapshot). A wake or a sleep moves it, and so does a person's
    /// keepalive; a write that only describes or verifies the agent (snapshot summaries, a
    /// check, a schedule's summary, a prune under the lock) does not. Stable across builds
    /// (SHA-256), since the ticks keep it on the schedule item (docs/schedules.md, *Carrying
    /// an occurrence*).
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

    /// The quoted version, as sent in `ETag`.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.version)
    }
}
