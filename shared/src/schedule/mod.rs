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
//! does with one due schedule: a pure decision), `readiness.rs` (each kind's measured
//! readiness, and how early a wake starts to be Ready at its minute).

mod carry;
pub mod plan;
pub mod readiness;

pub use carry::{decide, decide_early, keep_after, AgentSeen, Step, CATCH_UP_MS};
pub use plan::{Plan, ScheduleBody, ScheduleRules};
pub use readiness::{wake_lead_ms, DueLead, Readiness};
