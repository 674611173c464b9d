//! Every branch of [`decide`], one case each.

use super::*;
use crate::domain::Kind;
use crate::schedule::ScheduleBody;

const MIN: u64 = 60_000;
/// 2027-03-22T07:30:00Z, a Monday 08:30 in Berlin.
const W: u64 = 1_805_700_600_000;

fn plan() -> Plan {
    Plan::check(&ScheduleBody {
        timezone: Some("Europe/Berlin".into()),
        wake: Some("30 8 * * MON-FRI".into()),
        sleep: Some("0 12 * * MON-FRI".into()),
    })
    .unwrap()
}

fn record(
    next_wake: Option<u64>,
    next_sleep: Option<u64>,
    open: Option<Occurrence>,
) -> ScheduleRecord {
    ScheduleRecord {
        key: Some(crate::domain::AgentKey::new(Kind::Codex, "a")),
        timezone: "Europe/Berlin".into(),
        wake: Some("30 8 * * MON-FRI".into()),
        sleep: Some("0 12 * * MON-FRI".into()),
        next_wake_ms: next_wake,
        next_sleep_ms: next_sleep,
        next_wake_lead_ms: None,
        keep_ms: None,
        open,
        last: None,
        version: 3,
        updated_at: None,
    }
}

fn agent(state: WakeState, version: u64, in_flight: bool) -> AgentSeen {
    AgentSeen {
        version,
        rest: 0,
        state,
        in_flight,
    }
}

fn open(attempt: Attempt, seen_version: u64) -> Option<Occurrence> {
    Some(Occurrence {
        action: Action::Wake,
        at_ms: W,
        attempt,
        seen_version,
        seen_rest: None,
        started_ms: None,
        follow_up_ms: None,
    })
}

fn outcome(step: &Step) -> Option<&str> {
    match step {
        Step::Write(r) => r.last.as_ref().map(|l| l.outcome.as_str()),
        _ => None,
    }
}

#[test]
fn a_due_wake_is_acted_on_and_the_next_one_computed() {
    let step = decide(
        &record(Some(W), Some(W + 210 * MIN), None),
        &plan(),
        W,
        &agent(WakeState::Asleep, 9, false),
    );
    let Step::Act {
        record,
        action,
        carried,
    } = step
    else {
        panic!("{step:?}")
    };
    assert_eq!((action, carried), (Action::Wake, false));
    assert_eq!(record.next_wake_ms, Some(W + 86_400_000), "Tuesday 08:30");
    assert_eq!(
        record.next_sleep_ms,
        Some(W + 210 * MIN),
        "the sleep is untouched"
    );
    let started = open(Attempt::Acting, 9).map(|o| Occurrence {
        started_ms: Some(W),
        seen_rest: Some(0),
        ..o
    });
    assert_eq!(
        record.open, started,
        "started at the tick's time, where the agent rested"
    );
}

#[test]
fn nothing_due_is_idle() {
    let r = record(Some(W), None, None);
    assert_eq!(
        decide(&r, &plan(), W - 1, &agent(WakeState::Asleep, 1, false)),
        Step::Idle
    );
}

#[test]
fn more_than_fifteen_minutes_late_is_missed() {
    let step = decide(
        &record(Some(W), None, None),
        &plan(),
        W + 16 * MIN,
        &agent(WakeState::Asleep, 1, false),
    );
    assert_eq!(outcome(&step), Some("missed"));
    let Step::Write(r) = step else { unreachable!() };
    assert_eq!((r.open, r.next_wake_ms), (None, Some(W + 86_400_000)));
}

#[test]
fn a_missed_wake_of_an_agent_already_awake_is_reached_and_its_day_kept() {
    let step = decide(
        &record(Some(W), Some(W + 210 * MIN), None),
        &plan(),
        W + 30 * MIN,
        &agent(WakeState::Awake, 1, false),
    );
    assert_eq!(outcome(&step), Some("reached"));
    let Step::Write(r) = step else { unreachable!() };
    assert_eq!(r.open, None, "nothing acted on");
    assert_eq!(r.keep_ms, Some(W + 30 * MIN), "the day kept from now on");
    // Asleep, it was missed, and nothing is kept.
    let step = decide(
        &record(Some(W), Some(W + 210 * MIN), None),
        &plan(),
        W + 30 * MIN,
        &agent(WakeState::Asleep, 1, false),
    );
    let Step::Write(r) = step else {
        panic!("{step:?}")
    };
    assert_eq!(r.last.map(|l| l.outcome), Some("missed".to_string()));
    assert_eq!(r.keep_ms, None);
}

#[test]
fn the_newest_due_occurrence_wins() {
    // Both due (a tick after a long outage, within the window for the sleep only).
    let step = decide(
        &record(Some(W), Some(W + 10 * MIN), None),
        &plan(),
        W + 12 * MIN,
        &agent(WakeState::Awake, 1, false),
    );
    let Step::Act { action, .. } = step else {
        panic!("{step:?}")
    };
    assert_eq!(action, Action::Sleep);
    // A carried wake is superseded by a sleep that comes due.
    let r = record(
        Some(W + 86_400_000),
        Some(W + 5 * MIN),
        open(Attempt::Retry, 1),
    );
    let step = decide(
        &r,
        &plan(),
        W + 5 * MIN,
        &agent(WakeState::Asleep, 1, false),
    );
    let Step::Act { record, action, .. } = step else {
        panic!("{step:?}")
    };
    assert_eq!(action, Action::Sleep);
    assert_eq!(record.last.unwrap().outcome, "superseded");
}

#[test]
fn a_carried_occurrence_finishes_when_reached() {
    let r = record(Some(W + 86_400_000), None, open(Attempt::InFlight, 4));
    let step = decide(&r, &plan(), W + MIN, &agent(WakeState::Awake, 6, false));
    assert_eq!(outcome(&step), Some("reached"));
}

#[test]
fn a_carried_occurrence_is_acted_on_again_only_when_that_undoes_nothing() {
    let r = |attempt| record(Some(W + 86_400_000), None, open(attempt, 4));
    let again = |step: Step| matches!(step, Step::Act { carried: true, .. });
    // Our attempt came to nothing, and nobody moved the agent since: again.
    assert!(again(decide(
        &r(Attempt::Retry),
        &plan(),
        W + MIN,
        &agent(WakeState::Asleep, 4, false)
    )));
    // It came to nothing, but a person has moved the agent since (e.g. put it to sleep after
    // the scheduled wake failed to reach AgentKit): finished, their change stands.
    let step = decide(
        &r(Attempt::Retry),
        &plan(),
        W + MIN,
        &agent(WakeState::Asleep, 9, false),
    );
    assert_eq!(outcome(&step), Some("moved"));
    // In flight: driven on.
    assert!(again(decide(
        &r(Attempt::InFlight),
        &plan(),
        W + MIN,
        &agent(WakeState::Waking, 5, true)
    )));
    // Unknown outcome, record unchanged since: our act never landed.
    assert!(again(decide(
        &r(Attempt::Acting),
        &plan(),
        W + MIN,
        &agent(WakeState::Asleep, 4, false)
    )));
    // Unknown outcome or in flight before, and the agent has settled asleep since (a person's
    // sleep, a failed wake): finished, not woken again.
    for attempt in [Attempt::Acting, Attempt::InFlight] {
        let step = decide(
            &r(attempt),
            &plan(),
            W + MIN,
            &agent(WakeState::Asleep, 7, false),
        );
        assert_eq!(outcome(&step), Some("moved"), "{attempt:?}");
    }
    // The record moved, but only by this very action left unfinished (a `waking` record
    // whose lease lapsed: the tick died after its acquire landed): acted on again. A sleep
    // left so does not stand in a wake's way either way: it is not the wake's own.
    for attempt in [Attempt::Acting, Attempt::InFlight, Attempt::Retry] {
        assert!(
            again(decide(
                &r(attempt),
                &plan(),
                W + MIN,
                &agent(WakeState::Waking, 5, false)
            )),
            "{attempt:?}"
        );
    }
    let step = decide(
        &r(Attempt::Acting),
        &plan(),
        W + MIN,
        &agent(WakeState::Sleeping, 5, false),
    );
    assert_eq!(outcome(&step), Some("moved"));
    // Carried past the window: missed.
    let step = decide(
        &r(Attempt::Retry),
        &plan(),
        W + 16 * MIN,
        &agent(WakeState::Asleep, 9, false),
    );
    assert_eq!(outcome(&step), Some("missed"));
    // A tick older than the occurrence does nothing.
    assert_eq!(
        decide(
            &r(Attempt::Retry),
            &plan(),
            W - MIN,
            &agent(WakeState::Asleep, 9, false)
        ),
        Step::Idle
    );
}

#[test]
fn a_refused_sleep_is_tried_again_after_writes_that_leave_the_agent_where_it_rests() {
    // Seed 1035 of the long run: a scheduled sleep refused (its snapshot not confirmed), then
    // a sweep wrote the agent's snapshot summaries: the version moved, where it rests did not.
    let mut sleep = open(Attempt::Retry, 4);
    if let Some(o) = sleep.as_mut() {
        o.action = Action::Sleep;
        o.seen_rest = Some(77);
    }
    let r = record(None, Some(W + 86_400_000), sleep);
    let seen = |version, rest| AgentSeen {
        version,
        rest,
        state: WakeState::Awake,
        in_flight: false,
    };
    let step = decide(&r, &plan(), W + MIN, &seen(9, 77));
    assert!(
        matches!(
            step,
            Step::Act {
                action: Action::Sleep,
                carried: true,
                ..
            }
        ),
        "{step:?}"
    );
    // Woken again and slept by a person, or kept alive: it rests elsewhere; their change stands.
    let step = decide(&r, &plan(), W + MIN, &seen(9, 78));
    assert_eq!(outcome(&step), Some("moved"));
}

#[test]
fn a_rest_mark_moves_with_a_wake_a_sleep_or_a_keepalive_and_not_with_a_summary() {
    use crate::domain::{AgentKey, AgentRecord, Kind};
    let mut a = AgentRecord::absent(AgentKey::new(Kind::Codex, "a"));
    a.state = WakeState::Awake;
    a.session_id = Some("s-1".into());
    a.session_expire_at = Some("2027-01-01T08:00:00Z".into());
    let mark = a.rest_mark();
    let mut described = a.clone();
    described.version += 3;
    described.fence += 1;
    described.verified_at_ms = 99;
    described.snapshots = Vec::new();
    assert_eq!(
        described.rest_mark(),
        mark,
        "a summary or a check is no move"
    );
    let mut kept = a.clone();
    kept.session_expire_at = Some("2027-01-01T09:00:00Z".into());
    assert_ne!(kept.rest_mark(), mark, "a keepalive is");
    let mut woken = a.clone();
    woken.session_id = Some("s-2".into());
    assert_ne!(woken.rest_mark(), mark, "a new session is");
    let mut slept = a.clone();
    slept.state = WakeState::Asleep;
    assert_ne!(slept.rest_mark(), mark, "a sleep is");
}

#[test]
fn a_wake_with_a_lead_is_due_that_much_before_its_minute() {
    let r = record(Some(W), Some(W + 210 * MIN), None);
    let asleep = agent(WakeState::Asleep, 9, false);
    let lead = 3 * MIN;
    assert_eq!(
        decide_early(&r, &plan(), W - lead - 1, &asleep, lead),
        Step::Idle
    );
    let Step::Act { record, action, .. } = decide_early(&r, &plan(), W - lead, &asleep, lead)
    else {
        panic!("due at its start")
    };
    assert_eq!(action, Action::Wake);
    let open = record.open.clone().unwrap();
    // The occurrence is still the owner's minute; it started three minutes before.
    assert_eq!((open.at_ms, open.started_ms), (W, Some(W - lead)));
    // The next wake is the one after the minute, not the minute again.
    assert_eq!(record.next_wake_ms, Some(W + 86_400_000));
    // A sleep counts no lead: not due three minutes before its minute, due at it.
    let mut reached = record.clone();
    reached.open = None;
    let awake = agent(WakeState::Awake, 12, false);
    let sleep = W + 210 * MIN;
    assert_eq!(
        decide_early(&reached, &plan(), sleep - lead, &awake, lead),
        Step::Idle
    );
    assert!(matches!(
        decide_early(&reached, &plan(), sleep, &awake, lead),
        Step::Act {
            action: Action::Sleep,
            ..
        }
    ));
}

#[test]
fn an_occurrence_started_early_is_carried_before_its_minute() {
    let lead = 2 * MIN;
    let started = Some(Occurrence {
        action: Action::Wake,
        at_ms: W,
        attempt: Attempt::InFlight,
        seen_version: 4,
        seen_rest: None,
        started_ms: Some(W - lead),
        follow_up_ms: None,
    });
    let r = record(Some(W + 86_400_000), None, started);
    // A minute later, still before the minute: driven on, not idle.
    let step = decide_early(
        &r,
        &plan(),
        W - MIN,
        &agent(WakeState::Waking, 5, true),
        lead,
    );
    assert!(matches!(step, Step::Act { carried: true, .. }), "{step:?}");
    // Reached before the minute: finished.
    let step = decide_early(
        &r,
        &plan(),
        W - MIN,
        &agent(WakeState::Awake, 6, false),
        lead,
    );
    assert_eq!(outcome(&step), Some("reached"));
    // A repeated tick older than the start does nothing.
    assert_eq!(
        decide_early(
            &r,
            &plan(),
            W - 3 * MIN,
            &agent(WakeState::Waking, 5, true),
            lead
        ),
        Step::Idle
    );
}

#[test]
fn an_early_wake_never_starts_before_a_sleep_due_ahead_of_it() {
    // A sleep at 08:00 and a wake at 08:30 with a 45-minute lead: the wake starts just after
    // the sleep, not before it (where the sleep would undo it).
    let sleep = W - 30 * MIN;
    let r = record(Some(W), Some(sleep), None);
    let lead = 45 * MIN;
    assert_eq!(r.wake_starts_at_ms(lead), Some(sleep + 1));
    let awake = agent(WakeState::Awake, 3, false);
    let Step::Act { action, .. } = decide_early(&r, &plan(), sleep, &awake, lead) else {
        panic!("the sleep is due")
    };
    assert_eq!(action, Action::Sleep);
    let asleep = agent(WakeState::Asleep, 5, false);
    let after = record(Some(W), Some(W + 210 * MIN), None);
    assert!(matches!(
        decide_early(&after, &plan(), sleep + MIN, &asleep, lead),
        Step::Act {
            action: Action::Wake,
            ..
        }
    ));
}
