use super::*;

const H: u64 = 3_600;
/// 2026-12-07, a Monday, 00:00 UTC.
const MONDAY: u64 = 1_796_601_600;

/// An agent's announced changes, folded as the stream's consumer folds them: each change's
/// tally from the mark the one before it left.
fn fold(changes: &[(Announce, Trigger, u64)]) -> (Days, Option<UsageMark>) {
    let mut days = Days::new();
    let mut mark: Option<UsageMark> = None;
    for &(what, trigger, at_s) in changes {
        let change = UsageChange {
            before: mark.as_ref(),
            what,
            trigger,
            kept_snapshot: what == Announce::Asleep,
            at_s,
        };
        for (day, t) in tally_change(&change) {
            days.entry(day).or_default().add(&t);
        }
        mark = Some(UsageMark::after(mark.as_ref(), what, trigger, at_s));
    }
    (days, mark)
}

#[test]
fn a_day_of_one_agent_and_what_it_saves() {
    use Announce::*;
    let at = |h: f64| MONDAY + (h * H as f64) as u64;
    let (days, mark) = fold(&[
        (Created, Trigger::Http, at(9.0)),
        (Asleep, Trigger::Idle, at(10.25)),
        (Awake, Trigger::Http, at(11.0)),
        (Asleep, Trigger::Schedule, at(18.0)),
        (Awake, Trigger::Schedule, at(24.0 + 8.5)),
    ]);
    let monday = days[&(MONDAY / DAY_S)];
    // Awake 09:00–10:15 and 11:00–18:00, both woken by its owner.
    assert_eq!(monday.awake_person_s, 4_500 + 7 * H);
    assert_eq!(monday.awake_schedule_s, 0);
    // Asleep 10:15–11:00 and 18:00–24:00; Tuesday's 00:00–08:30 is Tuesday's.
    assert_eq!(monday.asleep_s, 2_700 + 6 * H);
    assert_eq!(days[&(MONDAY / DAY_S + 1)].asleep_s, 8 * H + 1_800);
    // The reference Studio: the create's session 09:00 until the 11:00 wake (2 h), that wake's
    // its whole 8 h (until 19:00): 10 h, where snapwake kept it awake 8 h 15 min.
    assert_eq!(monday.reference_s, 10 * H);
    assert_eq!(monday.saved_s(), (10 * H) as i64 - (8 * H + 900) as i64);
    assert_eq!(
        (
            monday.creates,
            monday.wakes,
            monday.sleeps_idle,
            monday.sleeps_schedule
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(monday.snapshots, 2);
    // Tuesday's wake is the schedule's and still open: 08:30 to noon awake, 3.5 h of reference.
    let mark = mark.expect("a mark");
    assert_eq!(mark.woken_by, Some(WokenBy::Schedule));
    let open = tally_open(&mark, at(24.0 + 12.0));
    let tuesday = open[&(MONDAY / DAY_S + 1)];
    assert_eq!(tuesday.awake_schedule_s, 3 * H + 1_800);
    assert_eq!(tuesday.reference_s, 3 * H + 1_800);
}

#[test]
fn an_interval_across_midnight_is_split_by_day() {
    let (days, _) = fold(&[
        (Announce::Awake, Trigger::Http, MONDAY - 2 * H),
        (Announce::Asleep, Trigger::Agentkit, MONDAY + 6 * H),
    ]);
    assert_eq!(days[&(MONDAY / DAY_S - 1)].awake_person_s, 2 * H);
    assert_eq!(days[&(MONDAY / DAY_S)].awake_person_s, 6 * H);
    assert_eq!(days[&(MONDAY / DAY_S)].sleeps_agentkit, 1);
}

#[test]
fn a_deletion_ends_the_reference_session_and_counts_nothing_after() {
    let (days, mark) = fold(&[
        (Announce::Created, Trigger::Http, MONDAY + 9 * H),
        (Announce::Deleted, Trigger::Http, MONDAY + 10 * H),
    ]);
    let monday = days[&(MONDAY / DAY_S)];
    assert_eq!((monday.awake_person_s, monday.reference_s), (H, H));
    let mark = mark.expect("a mark");
    assert_eq!(mark.resting, Resting::Gone);
    assert!(tally_open(&mark, MONDAY + 20 * H).is_empty());
}

#[test]
fn a_session_agentkit_ended_with_nothing_kept_is_a_sleep_a_failed_wake_is_not() {
    let (days, _) = fold(&[
        (Announce::Awake, Trigger::Http, MONDAY),
        (Announce::WakeFailed, Trigger::Agentkit, MONDAY + 8 * H),
        (Announce::WakeFailed, Trigger::Http, MONDAY + 9 * H),
    ]);
    let monday = days[&(MONDAY / DAY_S)];
    assert_eq!((monday.sleeps_agentkit, monday.failed_wakes), (1, 1));
    assert_eq!((monday.snapshots, monday.asleep_s), (0, H));
}

#[test]
fn days_are_named_and_read_back() {
    assert_eq!(day_name(MONDAY / DAY_S), "2026-12-07");
    assert_eq!(parse_day("2026-12-07"), Some(MONDAY / DAY_S));
    assert_eq!(parse_day("1970-01-01"), Some(0));
    assert_eq!(parse_day("2026-13-01"), None);
    assert_eq!(parse_day("1969-12-31"), None);
}

#[test]
fn a_tally_reads_back_from_its_values() {
    let t = Tally {
        awake_person_s: 1,
        sleeps_idle: 2,
        snapshots: 3,
        ..Tally::default()
    };
    assert_eq!(Tally::from_values(t.values()), t);
    assert_eq!(Tally::FIELDS.len(), t.values().len());
}
