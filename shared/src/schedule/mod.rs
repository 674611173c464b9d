//! Per-agent schedules (docs/schedules.md): a request's schedule checked into a plan with its next
//! occurrences, and what a tick decides for one due schedule.
//!
//! The *when* (five-field cron in an IANA zone) is [`crate::calendar`]; the item is
//! [`crate::domain::ScheduleRecord`]; what a schedule shows is `crate::view::schedule_view`.

mod carry;
pub mod plan;
pub mod readiness;

pub use carry::{decide, decide_early, keep_after, AgentSeen, Step, CATCH_UP_MS};
pub use plan::{Plan, ScheduleBody, ScheduleRules};
pub use readiness::{wake_lead_ms, DueLead, Readiness};
