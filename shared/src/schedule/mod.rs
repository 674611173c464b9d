//! Per-agent schedules (docs/schedules.md): a request's schedule checked into a plan with its
//! next occurrences, and what a tick decides for one due schedule.
//!
//! The *when* (five-field cron in an IANA zone) is [`crate::calendar`]; the item is
//! [`crate::domain::ScheduleRecord`]; its store port is [`crate::store::ScheduleStore`].
//!
//! What a schedule shows (its next occurrences) is rendered in one place for the routes and
//! every view of the agent: `crate::view::schedule_view`.
//!
//! Files: `plan.rs` (a body checked into a [`Plan`], next occurrences), `carry.rs` (what a tick
//! does with one due schedule: a pure decision).

mod carry;
mod plan;

pub use carry::{decide, AgentSeen, Step, CATCH_UP_MS};
pub use plan::{Plan, ScheduleBody, ScheduleRules};
