//! Usage counted from the published events alone, as a consumer of the bus could count it, by a
//! method of its own: each agent's events (repeats dropped by `change_id`, ordered by version)
//! become intervals, and a day's seconds are each interval's overlap with the day. It shares
//! nothing with snapwake's arithmetic (`snapwake::domain::usage`) but the meaning written in
//! docs/usage.md, so the two agreeing to the second is evidence, not a tautology.

use std::collections::{BTreeMap, HashSet};

use snapwake::domain::usage::Tally;
use snapwake::domain::{AgentKey, StateEvent, Trigger};

const DAY: u64 = 86_400;
const SESSION: u64 = 8 * 3_600;

/// A count a change adds on its day.
type Count = (u64, fn(&mut Tally));

/// What an interval counts as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    AwakePerson,
    AwakeSchedule,
    AwakeAgentkit,
    Asleep,
    Reference,
}

fn seconds(ts: &str) -> u64 {
    snapwake::ambient::epoch_ms(ts).unwrap_or(0) / 1000
}

fn version(change_id: &str) -> u64 {
    change_id
        .rsplit('/')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Each agent's usage by day (days since 1970, UTC) from `events`, intervals still open counted
/// up to `now_s`.
pub fn count(events: &[StateEvent], now_s: u64) -> BTreeMap<(AgentKey, u64), Tally> {
    let mut seen = HashSet::new();
    let mut by_agent: BTreeMap<AgentKey, Vec<&StateEvent>> = BTreeMap::new();
    for e in events {
        if seen.insert(e.detail.change_id.clone()) {
            let key = AgentKey::new(e.detail.kind, e.detail.agent_id.clone());
            by_agent.entry(key).or_default().push(e);
        }
    }
    let mut out: BTreeMap<(AgentKey, u64), Tally> = BTreeMap::new();
    for (agent, mut list) in by_agent {
        list.sort_by_key(|e| version(&e.detail.change_id));
        let mut intervals: Vec<(u64, u64, Part)> = Vec::new();
        let mut counts: Vec<Count> = Vec::new();
        // The state since the last event, and the reference session's start.
        let mut state: Option<(u64, Part)> = None;
        let mut reference: Option<u64> = None;
        for e in &list {
            let at = seconds(&e.detail.at);
            let kind = e.detail_type.trim_start_matches("snapwake.agent.");
            let was_awake = matches!(
                state,
                Some((
                    _,
                    Part::AwakePerson | Part::AwakeSchedule | Part::AwakeAgentkit
                ))
            );
            if let Some((since, part)) = state.take() {
                intervals.push((since, at, part));
            }
            if matches!(kind, "awake" | "created" | "deleted") {
                if let Some(from) = reference.take() {
                    intervals.push((from, at.min(from + SESSION), Part::Reference));
                }
            }
            let sleep_of = |t: Trigger| -> Option<fn(&mut Tally)> {
                match t {
                    Trigger::Http => Some(|t| t.sleeps_person += 1),
                    Trigger::Schedule => Some(|t| t.sleeps_schedule += 1),
                    Trigger::Idle => Some(|t| t.sleeps_idle += 1),
                    Trigger::Agentkit => Some(|t| t.sleeps_agentkit += 1),
                    _ => None,
                }
            };
            match kind {
                "awake" | "created" => {
                    let part = match e.detail.trigger {
                        Trigger::Schedule => Part::AwakeSchedule,
                        Trigger::Agentkit => Part::AwakeAgentkit,
                        _ => Part::AwakePerson,
                    };
                    state = Some((at, part));
                    reference = Some(at);
                    counts.push((
                        at,
                        if kind == "awake" {
                            |t| t.wakes += 1
                        } else {
                            |t| t.creates += 1
                        },
                    ));
                }
                "asleep" => {
                    state = Some((at, Part::Asleep));
                    if let Some(f) = sleep_of(e.detail.trigger) {
                        counts.push((at, f));
                    }
                    if e.detail.snapshot_id.is_some() {
                        counts.push((at, |t| t.snapshots += 1));
                    }
                }
                "wake_failed" => {
                    state = Some((at, Part::Asleep));
                    match (was_awake, sleep_of(e.detail.trigger)) {
                        (true, Some(f)) => counts.push((at, f)),
                        (true, None) => {}
                        (false, _) => counts.push((at, |t| t.failed_wakes += 1)),
                    }
                }
                _ => {}
            }
        }
        if let Some((since, part)) = state {
            intervals.push((since, now_s, part));
        }
        if let Some(from) = reference {
            intervals.push((from, now_s.min(from + SESSION), Part::Reference));
        }
        for (from, to, part) in intervals.into_iter().filter(|(f, t, _)| t > f) {
            for day in from / DAY..=(to - 1) / DAY {
                let overlap = to.min((day + 1) * DAY) - from.max(day * DAY);
                let t = out.entry((agent.clone(), day)).or_default();
                match part {
                    Part::AwakePerson => t.awake_person_s += overlap,
                    Part::AwakeSchedule => t.awake_schedule_s += overlap,
                    Part::AwakeAgentkit => t.awake_agentkit_s += overlap,
                    Part::Asleep => t.asleep_s += overlap,
                    Part::Reference => t.reference_s += overlap,
                }
            }
        }
        for (at, add) in counts {
            add(out.entry((agent.clone(), at / DAY)).or_default());
        }
    }
    out
}
