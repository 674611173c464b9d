//! State-change events (docs/events.md): what a write that changes an agent's state means, and
//! what set the change off. Pure vocabulary; publishing is `crate::events`.

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
    /// The EventBridge `detail-type`.
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
    /// A person or a program through the HTTP API.
    #[default]
    Http,
    /// A schedule's tick.
    Schedule,
    /// The retention sweep.
    Sweep,
    /// An owner's offboarding.
    Offboarding,
}

/// The event's `detail`. Never an endpoint, a credential or a signature: it is built from the
/// agent record, which holds none.
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
    /// `<kind>/<agent_id>/<record version>`: the same for every delivery of one change, so a
    /// consumer drops repeats by it.
    pub change_id: String,
}

/// One state-change event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateEvent {
    pub detail_type: String,
    pub detail: EventDetail,
}
