//! Idle sleep's invariant in the simulated deployment (docs/idle.md); the other invariant it
//! must keep, never asleep inside a schedule's awake window, is `checks::windows`'.

use std::collections::BTreeMap;

use snapwake::domain::{Trigger, WakeState};

use super::checks::{at, Truth};
use super::model::Model;

/// The longest an agent nobody uses may stay awake with idle sleep on, faults and all: half a
/// session (AgentKit ends it at eight hours anyway).
pub const LEFT_ALONE_MS: u64 = 4 * 3_600_000;

/// Idle sleep kept (docs/idle.md). An agent nobody has used (created, woken, kept alive) for its
/// idle time and two minutes (the tick at the minute, the consumer's turn) is either not awake,
/// or snapwake is carrying it to sleep: a sleep in flight, or an idle time still on its record
/// (a sleep that failed sets it an idle time later). Never awake with neither: idle sleep has
/// lost track of it. And whatever the faults, nobody's agent stays awake unused for
/// [`LEFT_ALONE_MS`]. An agent that ever had a schedule is `checks::windows`' (never asleep
/// inside a window); legacy ones were never woken by snapwake.
pub fn kept(
    model: &mut Model,
    truth: &BTreeMap<String, Truth>,
    now: u64,
    idle_minutes: u32,
) -> Result<(), String> {
    if idle_minutes == 0 {
        return Ok(());
    }
    let idle_ms = u64::from(idle_minutes) * 60_000;
    for a in model.agents.values() {
        let used = a.last_used_ms();
        let left_alone = a.recoverable
            && !a.legacy
            && a.delete_asked_ms.is_none()
            && a.schedules.is_empty()
            && now > used + idle_ms + 2 * 60_000;
        if !left_alone || model.offboarding_of(&a.owner).is_some() || model.outage_within(used, now)
        {
            continue;
        }
        let t = truth.get(&a.key.agent_id).cloned().unwrap_or_default();
        if t.live.is_empty() {
            continue;
        }
        let record = model.idle_seen.get(&a.key).copied();
        let carried = matches!(
            record,
            Some((WakeState::Sleeping, _, _)) | Some((WakeState::Awake, Some(_), _))
        );
        // A session snapwake only learned of (the refresh or the sweep found it) has no idle
        // time until its first use through snapwake (docs/idle.md): not idle sleep's to keep.
        if matches!(
            record,
            Some((WakeState::Awake, None, Some(Trigger::Agentkit)))
        ) {
            continue;
        }
        if !carried || now > used + LEFT_ALONE_MS {
            return Err(format!(
                "{} is awake at {}, nobody having used it since {} (idle time {idle_minutes} \
                 min), and its record is {record:?}; AgentKit: {t:?}; its record: {:#?}",
                a.key,
                at(now),
                at(used),
                model.history.get(&a.key),
            ));
        }
    }
    Ok(())
}
