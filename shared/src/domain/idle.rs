//! Idle sleep's rules (docs/idle.md) that are not a wake's: when an agent must stay awake
//! whatever its idleness, and the bounds of an idle time. When a wake or a use sets it idle is
//! the lock's setting, `crate::lock::IdlePolicy`, beside the wake's other settings.

use super::schedule::ScheduleSummary;

/// Activity moves an agent's idle time on at most this often: a Studio may report every
/// message, the table is written at most once a minute per agent.
pub const COALESCE_MS: u64 = 60_000;

/// The longest idle time an owner may set (a week): longer is never, which is 0.
pub const MOST_MINUTES: u32 = 7 * 24 * 60;

/// The end of the schedule's awake window `now_ms` is in, if it is in one: the schedule's wake
/// came and its sleep is next. Its owner asked for it awake until then; idle sleep waits.
pub fn awake_window_ends(schedule: Option<&ScheduleSummary>, now_ms: u64) -> Option<u64> {
    let schedule = schedule?;
    let sleep = schedule.next_sleep_ms.filter(|&s| s > now_ms)?;
    // A wake still to come before the sleep starts a window ahead: not inside one now. A wake
    // already due whose occurrence the tick has not worked off yet has begun its window (the
    // long run's seed 1039: an agent awake since before its wake, idle-slept inside the window
    // its summary still showed ahead).
    match schedule.next_wake_ms {
        Some(wake) if wake < sleep && wake > now_ms => None,
        _ => schedule.wake.as_ref().map(|_| sleep),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_awake_window_runs_from_the_schedules_wake_to_its_sleep() {
        let day = |wake: Option<u64>, sleep: Option<u64>| {
            let record = crate::domain::ScheduleRecord {
                wake: Some("30 8 * * *".into()),
                sleep: Some("0 18 * * *".into()),
                next_wake_ms: wake,
                next_sleep_ms: sleep,
                ..Default::default()
            };
            record.summary()
        };
        // 08:30 passed, 18:00 next, tomorrow's 08:30 after it: inside, until 18:00.
        let inside = day(Some(200), Some(100));
        assert_eq!(awake_window_ends(Some(&inside), 50), Some(100));
        // The wake comes first: the window is still ahead.
        assert_eq!(awake_window_ends(Some(&day(Some(80), Some(100))), 50), None);
        // The wake is due and not yet worked off: its window has begun.
        assert_eq!(
            awake_window_ends(Some(&day(Some(40), Some(100))), 50),
            Some(100)
        );
        // No sleep in the schedule: no window (idle sleep ends a day nobody came to).
        let wake_only = ScheduleSummary {
            sleep: None,
            next_sleep_ms: None,
            ..inside.clone()
        };
        assert_eq!(awake_window_ends(Some(&wake_only), 50), None);
        // A sleep-only schedule asks for no awake time.
        let sleep_only = ScheduleSummary {
            wake: None,
            next_wake_ms: None,
            ..inside
        };
        assert_eq!(awake_window_ends(Some(&sleep_only), 50), None);
        assert_eq!(awake_window_ends(None, 50), None);
    }
}
