//! When a wake or a use sets an agent idle (`IdlePolicy`, docs/idle.md).

use super::*;
use crate::domain::{AgentKey, Kind, Retention};

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
