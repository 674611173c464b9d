//! State-change events (docs/events.md): what a write that changes an agent's state means, and
//! what set the change off. Pure vocabulary; deriving and publishing is `crate::events`.

use serde::{Deserialize, Serialize};

/// The state change a write makes when it succeeds: the event's detail-type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Announce {
    Awake,
    Asleep,
    WakeFailed,
    Deleted,
    Created,
}

impl Announce {
    pub fn as_str(self) -> &'static str {
        match self {
            Announce::Awake => "awake",
            Announce::Asleep => "asleep",
            Announce::WakeFailed => "wake_failed",
            Announce::Deleted => "deleted",
            Announce::Created => "created",
        }
    }

    pub fn detail_type(self) -> &'static str {
        match self {
            Announce::Awake => "snapwake.agent.awake",
            Announce::Asleep => "snapwake.agent.asleep",
            Announce::WakeFailed => "snapwake.agent.wake_failed",
            Announce::Deleted => "snapwake.agent.deleted",
            Announce::Created => "snapwake.agent.created",
        }
    }
}

/// What set a change off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    #[default]
    Http,
    Schedule,
    Sweep,
    Offboarding,
    /// AgentKit itself: a session its clock ended, once snapwake records it.
    Agentkit,
    /// Idle sleep: nobody used the agent for its idle time (docs/idle.md).
    Idle,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Http => "http",
            Trigger::Schedule => "schedule",
            Trigger::Sweep => "sweep",
            Trigger::Offboarding => "offboarding",
            Trigger::Agentkit => "agentkit",
            Trigger::Idle => "idle",
        }
    }
}

/// The one of `all` whose `name` is `s`.
pub(super) fn named<T: Copy>(all: &[T], name: fn(T) -> &'static str, s: &str) -> Result<T, String> {
    all.iter()
        .copied()
        .find(|v| name(*v) == s)
        .ok_or_else(|| format!("unknown name {s:?}"))
}

impl std::str::FromStr for Announce {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        use Announce::*;
        named(
            &[Awake, Asleep, WakeFailed, Deleted, Created],
            Announce::as_str,
            s,
        )
    }
}

impl std::str::FromStr for Trigger {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        use Trigger::*;
        named(
            &[Http, Schedule, Sweep, Offboarding, Agentkit, Idle],
            Trigger::as_str,
            s,
        )
    }
}

/// The state change a write is, and what set it off: kept on the record until the next write,
/// so events are derived from the table's change stream alone (docs/events.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Announcement {
    pub what: Announce,
    pub trigger: Trigger,
}

/// The event's `detail`: built from the agent record, so never an endpoint or a credential.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventDetail {
    pub kind: super::Kind,
    pub agent_id: String,
    pub owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// When the change was written (RFC 3339).
    pub at: String,
    pub trigger: Trigger,
    /// `<kind>/<agent_id>/<record version>`: the same on every delivery, so repeats drop out.
    pub change_id: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateEvent {
    pub detail_type: String,
    pub detail: EventDetail,
}
