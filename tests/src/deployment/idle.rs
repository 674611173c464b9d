//! Idle sleep's invariant in the simulated deployment (docs/idle.md); the other invariant it
//! must keep, never asleep inside a schedule's awake window, is `checks::windows`'.

use std::collections::BTreeMap;

use super::checks::{at, Truth};
use super::model::Model;

/// Idle sleep kept (docs/idle.md): an agent nobody has used for long past its idle time is not
/// awake. Its schedule's windows are `windows`' (never asleep inside one): an agent that ever
/// had a schedule is left to it. The slack covers a sleep whose snapshot failed (awake again,
/// tried an idle time later) and faults: three idle times and ten minutes.
pub fn kept(
    model: &mut Model,
    truth: &BTreeMap<String, Truth>,
    now: u64,
    idle_minutes: u32,
) -> Result<(), String> {
    if idle_minutes == 0 {
        return Ok(());
    }
    let slack = 3 * u64::from(idle_minutes) * 60_000 + 10 * 60_000;
    for a in model.agents.values() {
        let used = a.last_used_ms();
        let left_alone = a.recoverable
            && !a.legacy
            && a.delete_asked_ms.is_none()
            && a.schedules.is_empty()
            && now > used + slack;
        if !left_alone || model.offboarding_of(&a.owner).is_some() || model.outage_within(used, now)
        {
            continue;
        }
        let t = truth.get(&a.key.agent_id).cloned().unwrap_or_default();
        if !t.live.is_empty() {
            return Err(format!(
                "{} is awake at {}, nobody having used it since {} (idle time {idle_minutes} \
                 min); AgentKit: {t:?}; its record: {:#?}",
                a.key,
                at(now),
                at(used),
                model.history.get(&a.key),
            ));
        }
    }
    Ok(())
}
