use super::*;
use super::{preference_applied as applied, preferred_wait as wait};

fn headers(values: &[&str]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for v in values {
        h.append("prefer", v.parse().unwrap());
    }
    h
}

#[test]
fn reads_the_wait_preference_as_rfc_7240_writes_it() {
    let s = |n| Some(Duration::from_secs(n));
    assert_eq!(wait(&headers(&["wait=10"])), s(10));
    assert_eq!(wait(&headers(&["WAIT = 5"])), s(5));
    assert_eq!(wait(&headers(&["wait=\"7\""])), s(7));
    assert_eq!(wait(&headers(&["respond-async, wait=3"])), s(3));
    assert_eq!(wait(&headers(&["handling=lenient", "wait=4; x=y"])), s(4));
    assert_eq!(wait(&headers(&["wait=0"])), s(0));
    // The first wait counts.
    assert_eq!(wait(&headers(&["wait=2, wait=9"])), s(2));
}

#[test]
fn caps_the_wait_at_twenty_seconds() {
    assert_eq!(wait(&headers(&["wait=21"])), Some(MAX_WAIT));
    assert_eq!(
        wait(&headers(&["wait=99999999999999999999999"])),
        Some(MAX_WAIT)
    );
}

#[test]
fn ignores_what_it_cannot_read() {
    for bad in [
        "wait=soon",
        "wait=-1",
        "wait=",
        "wait=1.5",
        "respond-async",
        "waiting=3",
    ] {
        assert_eq!(wait(&headers(&[bad])), None, "{bad}");
    }
    assert_eq!(wait(&HeaderMap::new()), None);
}

#[test]
fn says_what_was_applied_in_whole_seconds() {
    assert_eq!(applied(Duration::from_millis(20_900)), "wait=20");
    assert_eq!(applied(Duration::ZERO), "wait=0");
}
