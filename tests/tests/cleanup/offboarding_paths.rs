//! An owner whose offboarding is unfinished gets nothing of theirs woken, put to sleep, kept
//! alive, scheduled or created, whichever way it is asked for: each HTTP route answers 410
//! and a scheduled wake does nothing, with no AgentKit call on any of them
//! (docs/operations.md, "Offboarding").

use super::*;
use snapwake::offboarding::{record, Progress};
use snapwake::store::ScheduleStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_owner_gets_410_and_no_agentkit_call_on_every_path() {
    let (store, world, _) = deployed("offboard-paths", Duration::ZERO).await;
    let mut api = Api::new(store.clone(), world.client(), identity());
    // A schedule due at every minute's tick: more often than a deployment allows by default.
    api.resume.schedules.min_interval = Duration::ZERO;
    let (asleep, _) = world.asleep_agent("alice", "Asleep");
    let awake = caller::mint("alice");
    world.live_session("alice", &awake);
    // Both agents have records (an awake one is kept alive, an asleep one scheduled).
    for agent in [&asleep, &awake] {
        let wake = alices_request("POST", &format!("/v1/agents/codex/{agent}/resume"));
        let wake = prefer_wait(wake, 10);
        let (status, body) = answer(&api.handle(wake).await);
        assert_eq!(status, 200, "{body}");
    }
    let sleep = alices_request("POST", &format!("/v1/agents/codex/{asleep}/sleep"));
    let (status, body) = answer(&api.handle(prefer_wait(sleep, 10)).await);
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("asleep")),
        "{body}"
    );
    // A wake schedule, set before the offboarding began.
    let every_minute = serde_json::json!({"timezone": "UTC", "wake": "* * * * *"}).to_string();
    let put = request(
        "PUT",
        &format!("/v1/agents/codex/{asleep}/schedule"),
        Who::User("alice"),
        Some(&every_minute),
    );
    let (status, body) = answer(&api.handle(put).await);
    assert_eq!(status, 200, "{body}");

    record(
        &store,
        &Progress {
            owner: "alice".into(),
            started_at_ms: now_ms(),
            left: vec![codex(&asleep), codex(&awake)],
            runs: 1,
            listed_at_ms: None,
            finished_at_ms: None,
        },
    )
    .await
    .unwrap();
    world.sim.control().reset_counters();

    let path = |agent: &str, verb: &str| format!("/v1/agents/codex/{agent}/{verb}");
    let refused = [
        ("resume", alices_request("POST", &path(&asleep, "resume"))),
        ("sleep", alices_request("POST", &path(&awake, "sleep"))),
        (
            "keepalive",
            request(
                "POST",
                &path(&awake, "keepalive"),
                Who::User("alice"),
                Some(r#"{"ttl_s": 3600}"#),
            ),
        ),
        (
            "schedule",
            request(
                "PUT",
                &path(&awake, "schedule"),
                Who::User("alice"),
                Some(&every_minute),
            ),
        ),
        (
            "create",
            create_request(
                Who::User("alice"),
                r#"{"kind": "codex", "display_name": "New", "retention": "recoverable"}"#,
                Some("offboard-paths-create"),
            ),
        ),
    ];
    for (what, request) in refused {
        let (status, body) = answer(&api.handle(request).await);
        assert_eq!(
            (status, body["code"].as_str()),
            (410, Some("AGENT_GONE")),
            "{what}: {body}"
        );
        assert_eq!(world.agentkit_calls(), 0, "{what} asked AgentKit");
    }
    // An admin asking on the owner's behalf is refused the same.
    let wake = request("POST", &path(&asleep, "resume"), Who::Admin("root"), None);
    assert_eq!(answer(&api.handle(wake).await).0, 410);

    // The schedule's wake comes due: the tick wakes nothing.
    let due = store
        .get_schedule(&codex(&asleep))
        .await
        .unwrap()
        .and_then(|s| s.next_wake_ms)
        .expect("a wake is scheduled");
    let report = api
        .resume
        .tick_and_consume(due, Deadline::after(Duration::from_secs(20)))
        .await
        .unwrap();
    assert_eq!(report.due, 1, "{report:?}");
    assert_eq!(report.woke + report.carried, 0, "{report:?}");
    assert_eq!(world.agentkit_calls(), 0, "the tick asked AgentKit");
    let record = store.get(&codex(&asleep)).await.unwrap().unwrap();
    assert_eq!(record.state, WakeState::Asleep);

    // bob is not affected: his agent is created.
    let (status, body) = answer(
        &api.handle(create_request(
            Who::User("bob"),
            r#"{"kind": "codex", "display_name": "Bob's", "retention": "recoverable"}"#,
            Some("offboard-paths-bob"),
        ))
        .await,
    );
    assert_eq!(status, 201, "{body}");
}
