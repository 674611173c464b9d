use super::*;

const PACE: Pace = Pace {
    min: Duration::from_millis(250),
    max: Duration::from_secs(2),
};

#[test]
fn polls_are_close_early_and_spaced_out_later() {
    let t0 = 1_000_000;
    assert_eq!(PACE.gap(t0, t0), Duration::from_millis(250));
    assert_eq!(PACE.gap(t0, t0 + 1_000), Duration::from_millis(250));
    assert_eq!(PACE.gap(t0, t0 + 2_000), Duration::from_millis(500));
    assert_eq!(PACE.gap(t0, t0 + 60_000), Duration::from_secs(2));
    // Unknown start, or a clock that went back: the shortest pause.
    assert_eq!(PACE.gap(0, t0), Duration::from_millis(250));
    assert_eq!(PACE.gap(t0, t0 - 5), Duration::from_millis(250));
}

#[test]
fn retry_after_is_whole_seconds_and_never_zero() {
    let t0 = 1_000_000;
    assert_eq!(PACE.retry_after_s(t0, t0), 1);
    assert_eq!(PACE.retry_after_s(t0, t0 + 5_000), 2);
    assert_eq!(PACE.retry_after_s(t0, t0 + 600_000), 2);
}
