//! The `schedule` of an agent view and of the schedule routes: one rendering of the stored
//! summary, so the routes and every view of the agent show the same next occurrences.

use crate::ambient::format_ms;
use crate::domain::{ScheduleSummary, ScheduleView};

/// `summary` as the API shows it: the stored next occurrences as RFC 3339 instants.
pub fn schedule_view(summary: &ScheduleSummary) -> ScheduleView {
    ScheduleView {
        timezone: summary.timezone.clone(),
        wake: summary.wake.clone(),
        sleep: summary.sleep.clone(),
        next_wake_at: summary.next_wake_ms.map(format_ms),
        wake_starts_at: summary.wake_starts_at_ms().map(format_ms),
        next_sleep_at: summary.next_sleep_ms.map(format_ms),
    }
}
