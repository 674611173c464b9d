//! The vocabulary of snapwake, free of I/O: sandbox kinds, retention, and the views of agents,
//! sessions and snapshots that the API returns.

mod agent;
mod event;
pub mod failure;
mod key;
mod kind;
mod open_url;
mod record;
mod schedule;
mod tool_registry;
mod session;

pub use agent::{AgentState, AgentView, SessionView, SnapshotView, WakeView};
pub use event::{Announce, Announcement, EventDetail, StateEvent, Trigger};
pub use key::AgentKey;
pub use kind::{Kind, ParseKindError, ParseRetentionError, Retention};
pub use open_url::OpenUrl;
pub use record::{AgentRecord, Description, WakeState};
pub use schedule::{
    Action, Attempt, Occurrence, ScheduleRecord, ScheduleSummary, ScheduleView, Settled,
};
pub use session::{
    is_session_active, is_session_usable, is_snapshot_in_progress, is_snapshot_wakeable,
    SessionPhase, SnapshotPhase, REASON_EXPIRED,
};
pub use tool_registry::{KindTools, ToolRegistry};
