//! Per-agent schedules (docs/schedules.md): a request's schedule checked into a plan with its
//! next occurrences, and what a tick decides for one due schedule.
//!
//! The *when* (five-field cron in an IANA zone) is [`crate::calendar`]; the item is
//! [`crate::domain::ScheduleRecord`]; its store port is [`crate::store::ScheduleStore`].
//!
//! Files: `plan.rs` (a body checked into a [`Plan`], next occurrences), `carry.rs` (what a tick
//! does with one due schedule: a pure decision).

mod carry;
mod plan;

pub use carry::{decide, AgentSeen, Step, CATCH_UP_MS};
pub use plan::{Plan, ScheduleBody};

use crate::domain::{ScheduleRecord, ScheduleView};
use crate::timestamp::format_ms;

/// What the schedule routes answer: the item with the next occurrences it has decided on (an
/// agent view counts them from the record's summary instead, `view::schedule_view`).
pub fn summary(record: &ScheduleRecord) -> ScheduleView {
    ScheduleView {
        timezone: record.timezone.clone(),
        wake: record.wake.clone(),
        sleep: record.sleep.clone(),
        next_wake_at: record.next_wake_ms.map(format_ms),
        next_sleep_at: record.next_sleep_ms.map(format_ms),
    }
}
