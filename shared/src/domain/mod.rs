//! The vocabulary of snapwake, free of I/O: sandbox kinds, retention, and the views of agents,
//! sessions and snapshots that the API returns.

mod agent;
mod event;
pub mod failure;
pub mod idle;
mod kind;
mod schedule;
pub mod usage;

pub use agent::{
    is_session_active, is_session_usable, is_snapshot_in_progress, is_snapshot_wakeable,
    SessionPhase, SnapshotPhase, REASON_EXPIRED,
};
pub use agent::{AgentRecord, Description, WakeState};
pub use agent::{AgentState, AgentView, SessionView, SnapshotView, WakeView};
pub use event::{Announce, Announcement, EventDetail, StateEvent, Trigger};
pub use kind::AgentKey;
pub use kind::{Kind, ParseKindError, ParseRetentionError, Retention};
pub use kind::{KindTools, OpenUrl, ToolRegistry};
pub use schedule::{
    Action, Attempt, Occurrence, ScheduleRecord, ScheduleSummary, ScheduleView, Settled,
};
