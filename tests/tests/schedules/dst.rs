//! Daylight saving through the tick: the instants a schedule fires at across the spring and
//! autumn transitions of Europe/Berlin and America/New_York (2027), ticked minute by minute
//! around each transition.

use snapwake::schedule::{Plan, ScheduleBody};

use super::*;

/// Tick every minute from `from` to `to` (RFC 3339) and answer the instants the schedule fired
/// at (its `last` occurrence each time it changes).
async fn fired_between<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    from: &str,
    to: &str,
) -> Vec<String> {
    let mut fired = Vec::new();
    // What fired before this window is not part of the answer.
    let before = f
        .store
        .get_schedule(&key(agent_id))
        .await
        .unwrap()
        .unwrap()
        .last;
    let before = before.map(|l| snapwake::ambient::format_ms(l.at_ms));
    let mut t = at(from);
    while t <= at(to) {
        tick(f, t).await;
        let last = f
            .store
            .get_schedule(&key(agent_id))
            .await
            .unwrap()
            .unwrap()
            .last;
        if let Some(last) = last {
            let when = snapwake::ambient::format_ms(last.at_ms);
            if fired.last() != Some(&when) && before.as_ref() != Some(&when) {
                fired.push(when);
            }
        }
        t += 60_000;
    }
    fired
}

/// The schedule `wake` in `zone`, as if PUT at `since`.
async fn schedule_since<S: AgentStore + ScheduleStore, K: AgentKit>(
    f: &Resume<S, K>,
    agent_id: &str,
    zone: &str,
    wake: &str,
    since: &str,
) {
    let plan = Plan::check(&ScheduleBody {
        timezone: Some(zone.into()),
        wake: Some(wake.into()),
        sleep: None,
    })
    .unwrap();
    let mut record = plan.record(at(since));
    record.key = Some(key(agent_id));
    let version = f
        .store
        .get_schedule(&key(agent_id))
        .await
        .unwrap()
        .map_or(0, |r| r.version);
    f.store.put_schedule(&record, version).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn berlin_and_new_york_fire_at_the_right_instants_across_dst() {
    let (store, world, _) = deployed("tick-dst", Duration::from_millis(50)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Data helper").await;
    let (status, _) = settle_alices(&f, &agent_id, "resume", Duration::from_secs(30)).await;
    assert_eq!(
        status, 200,
        "awake: each occurrence finds it awake and leaves it so"
    );

    // Berlin springs forward on 2027-03-28 at 02:00 CET: 02:30 does not exist that day and
    // fires at the next valid minute, 03:00 CEST (01:00Z).
    schedule_since(
        &f,
        &agent_id,
        "Europe/Berlin",
        "30 2 * * *",
        "2027-03-27T00:00:00Z",
    )
    .await;
    let fired = fired_between(
        &f,
        &agent_id,
        "2027-03-27T01:20:00Z",
        "2027-03-27T01:40:00Z",
    )
    .await;
    assert_eq!(fired, ["2027-03-27T01:30:00Z"]);
    let fired = fired_between(
        &f,
        &agent_id,
        "2027-03-28T00:20:00Z",
        "2027-03-28T01:40:00Z",
    )
    .await;
    assert_eq!(
        fired,
        ["2027-03-28T01:00:00Z"],
        "the gap fires once, at 03:00 CEST"
    );
    let next = next_wake(&store, &agent_id).await;
    assert_eq!(next, Some(at("2027-03-29T00:30:00Z")), "then 02:30 CEST");

    // Berlin falls back on 2027-10-31 at 03:00 CEST: 02:30 happens twice, fires once (CEST).
    schedule_since(
        &f,
        &agent_id,
        "Europe/Berlin",
        "30 2 * * *",
        "2027-10-30T12:00:00Z",
    )
    .await;
    let fired = fired_between(
        &f,
        &agent_id,
        "2027-10-31T00:00:00Z",
        "2027-10-31T02:00:00Z",
    )
    .await;
    assert_eq!(fired, ["2027-10-31T00:30:00Z"], "the fold fires once");
    let next = next_wake(&store, &agent_id).await;
    assert_eq!(next, Some(at("2027-11-01T01:30:00Z")), "then 02:30 CET");

    // New York springs forward on 2027-03-14 at 02:00 EST: 02:30 → 03:00 EDT (07:00Z).
    schedule_since(
        &f,
        &agent_id,
        "America/New_York",
        "30 2 * * *",
        "2027-03-13T12:00:00Z",
    )
    .await;
    let fired = fired_between(
        &f,
        &agent_id,
        "2027-03-14T06:20:00Z",
        "2027-03-14T07:40:00Z",
    )
    .await;
    assert_eq!(fired, ["2027-03-14T07:00:00Z"]);

    // New York falls back on 2027-11-07 at 02:00 EDT: 01:30 happens twice, fires once (EDT).
    schedule_since(
        &f,
        &agent_id,
        "America/New_York",
        "30 1 * * *",
        "2027-11-06T12:00:00Z",
    )
    .await;
    let fired = fired_between(
        &f,
        &agent_id,
        "2027-11-07T05:00:00Z",
        "2027-11-07T07:00:00Z",
    )
    .await;
    assert_eq!(
        fired,
        ["2027-11-07T05:30:00Z"],
        "01:30 EDT, not again at 01:30 EST"
    );
}
