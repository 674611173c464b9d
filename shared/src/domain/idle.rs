//! Idle sleep's rules (docs/idle.md): how long an awake agent may go unused before it is put to
//! sleep, when that is, and when it must stay awake whatever its idleness.

use super::agent::AgentRecord;
use super::kind::Retention;
use super::schedule::ScheduleSummary;

/// Activity moves an agent's idle time on at most this often: a Studio may report every
/// message, the table is written at most once a minute per agent.
pub const COALESCE_MS: u64 = 60_000;

/// The longest idle time an owner may set (a week): longer is never, which is 0.
pub const MOST_MINUTES: u32 = 7 * 24 * 60;

/// The deployment's idle sleep: its idle time for agents whose owner set none (0: off, the
/// default until a deployment's Studio reports activity).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdlePolicy {
    pub default_minutes: u32,
}

impl IdlePolicy {
    /// The idle time that applies to an agent: its owner's (0: never), else the deployment's —
    /// but never a temporary agent's unless its owner turned it on, since its work is not kept.
    pub fn minutes(&self, own: Option<u32>, retention: Option<Retention>) -> u32 {
        match own {
            Some(minutes) => minutes,
            None if retention == Some(Retention::Temporary) => 0,
            None => self.default_minutes,
        }
    }

    /// When `record`, used at `used_ms`, becomes idle; `None`: idle sleep is off for it.
    pub fn idle_at(&self, record: &AgentRecord, used_ms: u64) -> Option<u64> {
        let minutes = self.minutes(record.idle_minutes, record.description.retention);
        (minutes > 0).then(|| used_ms + u64::from(minutes) * 60_000)
    }

    /// The idle time to write for activity at `used_ms`: `None` when the record's is recent
    /// enough that the write would change nothing that matters (coalescing), or when the agent
    /// is not awake (activity on an agent asleep moves nothing).
    pub fn touched(&self, record: &AgentRecord, used_ms: u64) -> Option<u64> {
        if record.state != super::agent::WakeState::Awake {
            return None;
        }
        let next = self.idle_at(record, used_ms)?;
        match record.idle_at_ms {
            Some(kept) if next < kept + COALESCE_MS => None,
            _ => Some(next),
        }
    }
}

/// The end of the schedule's awake window `now_ms` is in, if it is in one: the schedule's wake
/// came and its sleep is next. Its owner asked for it awake until then; idle sleep waits.
pub fn awake_window_ends(schedule: Option<&ScheduleSummary>, now_ms: u64) -> Option<u64> {
    let schedule = schedule?;
    let sleep = schedule.next_sleep_ms.filter(|&s| s > now_ms)?;
    // A wake due before the sleep starts a window still ahead: not inside one now.
    match schedule.next_wake_ms {
        Some(wake) if wake < sleep => None,
        _ => schedule.wake.as_ref().map(|_| sleep),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AgentKey, Kind, WakeState};

    fn awake(idle_at_ms: Option<u64>, own: Option<u32>, retention: Retention) -> AgentRecord {
        let mut r = AgentRecord::absent(AgentKey::new(Kind::Codex, "a"));
        r.state = WakeState::Awake;
        r.idle_at_ms = idle_at_ms;
        r.idle_minutes = own;
        r.description.retention = Some(retention);
        r
    }

    #[test]
    fn the_owner_decides_then_the_deployment_and_a_temporary_agent_only_when_asked() {
        let policy = IdlePolicy {
            default_minutes: 15,
        };
        let at = |r: &AgentRecord| policy.idle_at(r, 1_000);
        assert_eq!(
            at(&awake(None, None, Retention::Recoverable)),
            Some(901_000)
        );
        assert_eq!(
            at(&awake(None, Some(5), Retention::Recoverable)),
            Some(301_000)
        );
        assert_eq!(
            at(&awake(None, Some(0), Retention::Recoverable)),
            None,
            "never"
        );
        assert_eq!(at(&awake(None, None, Retention::Temporary)), None, "off");
        assert_eq!(
            at(&awake(None, Some(5), Retention::Temporary)),
            Some(301_000)
        );
        let off = IdlePolicy::default();
        assert_eq!(
            off.idle_at(&awake(None, None, Retention::Recoverable), 0),
            None
        );
        assert_eq!(
            off.idle_at(&awake(None, Some(1), Retention::Recoverable), 0),
            Some(60_000)
        );
    }

    #[test]
    fn activity_writes_at_most_once_a_minute_and_never_for_an_agent_asleep() {
        let policy = IdlePolicy {
            default_minutes: 30,
        };
        let r = awake(Some(1_800_000), None, Retention::Recoverable);
        assert_eq!(policy.touched(&r, 59_999), None, "within the minute");
        assert_eq!(policy.touched(&r, 60_000), Some(1_860_000));
        let mut asleep = r.clone();
        asleep.state = WakeState::Asleep;
        assert_eq!(policy.touched(&asleep, 600_000), None);
        // An awake agent with no idle time yet (idle sleep turned on since) gets one.
        assert_eq!(
            policy.touched(&awake(None, None, Retention::Recoverable), 5),
            Some(1_800_005)
        );
    }

    #[test]
    fn the_awake_window_runs_from_the_schedules_wake_to_its_sleep() {
        let day = |wake: Option<u64>, sleep: Option<u64>| ScheduleSummary {
            timezone: "UTC".into(),
            wake: Some("30 8 * * *".into()),
            sleep: Some("0 18 * * *".into()),
            next_wake_ms: wake,
            next_sleep_ms: sleep,
            next_wake_lead_ms: None,
        };
        // 08:30 passed, 18:00 next, tomorrow's 08:30 after it: inside, until 18:00.
        let inside = day(Some(200), Some(100));
        assert_eq!(awake_window_ends(Some(&inside), 50), Some(100));
        // The wake comes first: the window is still ahead.
        assert_eq!(awake_window_ends(Some(&day(Some(80), Some(100))), 50), None);
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
