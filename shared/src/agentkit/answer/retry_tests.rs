use super::*;

#[test]
fn waits_grow_with_jitter_and_respect_the_cap() {
    let p = RetryPolicy::default();
    for _ in 0..200 {
        let w0 = p.wait(0, None);
        assert!(w0 >= Duration::from_millis(100) && w0 <= Duration::from_millis(200));
        let w1 = p.wait(1, None);
        assert!(w1 >= Duration::from_millis(200) && w1 <= Duration::from_millis(400));
        assert!(p.wait(30, None) <= p.max_wait);
    }
}

#[test]
fn retry_after_wins_but_is_capped() {
    let p = RetryPolicy::default();
    assert_eq!(
        p.wait(0, Some(Duration::from_secs(2))),
        Duration::from_secs(2)
    );
    assert_eq!(p.wait(0, Some(Duration::from_secs(60))), p.max_wait);
}

#[tokio::test]
async fn no_retry_past_the_budget_or_the_deadline() {
    let p = RetryPolicy::default();
    let far = Deadline::after(Duration::from_secs(60));
    assert!(p.next_wait(0, None, far).is_some());
    assert!(p.next_wait(1, None, far).is_some());
    assert!(p.next_wait(2, None, far).is_none(), "only 2 retries");
    let near = Deadline::after(Duration::from_millis(500));
    assert!(p.next_wait(0, Some(Duration::from_secs(1)), near).is_none());
}

#[test]
fn retry_after_parses_seconds_only() {
    assert_eq!(parse_retry_after(Some("3")), Some(Duration::from_secs(3)));
    assert_eq!(parse_retry_after(Some(" 1 ")), Some(Duration::from_secs(1)));
    assert_eq!(
        parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")),
        None
    );
    assert_eq!(parse_retry_after(None), None);
}
