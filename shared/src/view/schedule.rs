//! The `schedule` of an agent view: the summary the agent record keeps, with its next
//! occurrences counted from the view's time.

use crate::calendar::{next_after, Cron, Zone};
use crate::domain::{ScheduleSummary, ScheduleView};
use crate::timestamp::format_ms;

/// `summary` as a view at `now_ms`; an expression or zone this version cannot read shows no
/// next occurrence rather than failing the view.
pub fn schedule_view(summary: &ScheduleSummary, now_ms: u64) -> ScheduleView {
    let zone = Zone::named(&summary.timezone).ok();
    let now = i64::try_from(now_ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok());
    let next = |expr: &Option<String>| -> Option<String> {
        let cron: Cron = expr.as_deref()?.parse().ok()?;
        let at = next_after(&cron, zone.as_ref()?, now?)?;
        u64::try_from(at.as_millisecond()).ok().map(format_ms)
    };
    ScheduleView {
        timezone: summary.timezone.clone(),
        wake: summary.wake.clone(),
        sleep: summary.sleep.clone(),
        next_wake_at: next(&summary.wake),
        next_sleep_at: next(&summary.sleep),
    }
}
