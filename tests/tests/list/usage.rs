//! `GET /v1/usage` on DynamoDB Local (docs/usage.md): a person reads their own agents' day rows,
//! priced, by day and by agent, never another owner's; an admin reads another's or everyone's;
//! CSV says what JSON says. Its `Query` of the usage partitions is a call the list function's
//! policy must allow (tests/tests/iam.rs).

use snapwake::domain::usage::{day_name, Tally, DAY_S};
use snapwake::identity::owner_keys;
use snapwake::store::{UsageRow, UsageStore};
use snapwake::usage::report::parse_prices;

use super::*;

fn row(day: u64, owner: &str, agent: &str, awake_s: u64) -> UsageRow {
    UsageRow {
        day,
        owner_key: owner_keys(owner)[0].clone(),
        owner: Some(owner.to_string()),
        agent: AgentKey::new(Kind::Codex, agent),
        tally: Tally {
            awake_person_s: awake_s,
            reference_s: 8 * 3_600,
            wakes: 1,
            sleeps_idle: 1,
            ..Tally::default()
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_each_owners_own_and_an_admins_for_anyone() {
    let store = dynamo_store("list-usage").await;
    let world = World::start(Duration::ZERO).await;
    let today = now_s() as u64 / DAY_S;
    for (day, owner, agent, awake, change) in [
        (today, "alice", "a-1", 3_600, "c/a-1/1"),
        (today - 1, "alice", "a-1", 7_200, "c/a-1/2"),
        (today, "alice", "a-2", 1_800, "c/a-2/1"),
        (today, "bob", "b-1", 900, "c/b-1/1"),
    ] {
        assert!(store
            .add_usage(&row(day, owner, agent, awake), change)
            .await
            .expect("written"));
    }
    let settings = ListSettings {
        prices: parse_prices("codex=0.5", "EUR").expect("prices"),
        ..ListSettings::default()
    };
    let f = list_fn(store.clone(), world.client(), settings);
    let from = day_name(today - 1);
    let to = day_name(today);
    let range = [("from", from.as_str()), ("to", to.as_str())];

    let (status, by_day) = get(&f, "/v1/usage", &range, Who::User("alice")).await;
    assert_eq!(status, 200, "{by_day}");
    let days: Vec<u64> = by_day["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["awake_s"]["person"].as_u64().expect("seconds"))
        .collect();
    assert_eq!(days, vec![7_200, 3_600 + 1_800], "never bob's");
    assert_eq!(by_day["total"]["sleeps"]["idle"], 3);
    // 3.5 h awake at 0.5 an hour; three reference sessions of 8 h.
    assert_eq!(by_day["total"]["cost"]["awake"], 1.75);
    assert_eq!(by_day["total"]["cost"]["saved"], 10.25);

    let by_agent = [("by", "agent"), range[0], range[1]];
    let (_, agents) = get(&f, "/v1/usage", &by_agent, Who::User("alice")).await;
    let ids: Vec<&str> = agents["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["agent_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, vec!["a-1", "a-2"]);

    // Someone else's is not alice's to read; an admin reads bob's, and everyone's.
    let bobs = [("owner", "bob"), range[0], range[1]];
    let (status, _) = get(&f, "/v1/usage", &bobs, Who::User("alice")).await;
    assert_eq!(status, 404);
    let (status, bob) = get(&f, "/v1/usage", &bobs, Who::Admin("root")).await;
    assert_eq!(status, 200, "{bob}");
    assert_eq!(bob["total"]["awake_s"]["total"], 900);
    let everyone = [("owner", "*"), range[0], range[1]];
    let (_, all) = get(&f, "/v1/usage", &everyone, Who::Admin("root")).await;
    assert_eq!(
        all["total"]["awake_s"]["total"],
        3_600 + 7_200 + 1_800 + 900
    );

    // Bad input is a problem, not a guess.
    let bad = [("from", "2026-13-01")];
    let (status, problem) = get(&f, "/v1/usage", &bad, Who::User("alice")).await;
    assert_eq!(
        (status, &problem["code"]),
        (400, &serde_json::json!("INVALID_REQUEST"))
    );
    let (status, _) = get(&f, "/v1/usage", &[("by", "week")], Who::User("alice")).await;
    assert_eq!(status, 400);
}
