use super::*;
use time::macros::datetime;

#[test]
fn formats_utc_whole_seconds_and_orders_by_time_not_text() {
    assert_eq!(
        format(datetime!(2026-12-02 10:00:00.75 +08:00)),
        "2026-12-02T02:00:00Z"
    );
    // Text order would put "…T09…+00:00" after "…T08…-02:00"; time order does not.
    let a = sort_key(Some("2026-12-02T09:00:00+00:00"));
    let b = sort_key(Some("2026-12-02T08:00:00-02:00"));
    assert!(a < b);
    assert!(sort_key(None) < a && sort_key(Some("soon")) == sort_key(None));
    assert_eq!(
        parse("2026-12-02T02:00:00Z"),
        Some(datetime!(2026-12-02 02:00:00 UTC))
    );
}

#[test]
fn epoch_milliseconds_round_trip_to_the_second() {
    let ms = epoch_ms("2026-12-02T02:00:00+01:00").unwrap();
    assert_eq!(format_ms(ms), "2026-12-02T01:00:00Z");
    assert_eq!(format_ms(ms + 999), "2026-12-02T01:00:00Z");
    assert_eq!(epoch_ms("later"), None);
}

#[tokio::test(start_paused = true)]
async fn a_simulated_thread_keeps_tokio_s_time_from_the_instant_it_chose() {
    simulate_from(datetime!(2027-03-22 08:29:00 UTC));
    assert_eq!(now(), "2027-03-22T08:29:00Z");
    tokio::time::sleep(std::time::Duration::from_secs(90)).await;
    assert_eq!(now(), "2027-03-22T08:30:30Z");
    assert_eq!(now_s(), datetime!(2027-03-22 08:30:30 UTC).unix_timestamp());
    // Another thread keeps the system's clock.
    let elsewhere = std::thread::spawn(now_ms).join().unwrap();
    assert!(elsewhere > now_ms() + 365 * 86_400_000 || elsewhere + 86_400_000 < now_ms());
}
