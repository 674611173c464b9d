//! The schedule routes: what a person can set, read and remove, and every refusal a clear
//! problem naming its field.

use super::*;

/// PUT answers the schedule with its next occurrences (UTC instants), GET reads it back, the
/// list shows it on the agent, DELETE removes it (204, then 404).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_is_set_read_listed_and_removed() {
    let (store, world, _) = deployed("schedule-routes", Duration::from_millis(50)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Data helper").await;

    let body = put_schedule(
        &f,
        &agent_id,
        weekdays("30 8 * * MON-FRI", "0 19 * * MON-FRI", "Europe/Berlin"),
    )
    .await;
    assert_eq!(body["timezone"], "Europe/Berlin");
    assert_eq!(body["wake"], "30 8 * * MON-FRI");
    assert_eq!(body["sleep"], "0 19 * * MON-FRI");
    let next_wake = body["next_wake_at"].as_str().unwrap();
    let next_sleep = body["next_sleep_at"].as_str().unwrap();
    assert!(
        next_wake.ends_with('Z') && next_sleep.ends_with('Z'),
        "{body}"
    );
    let now = snapwake::ambient::now_ms();
    assert!(
        at(next_wake) > now && at(next_sleep) > now,
        "both in the future: {body}"
    );
    // 08:30 in Berlin is 06:30 or 07:30 UTC, whatever the season.
    assert!(
        next_wake.contains("T06:30:00") || next_wake.contains("T07:30:00"),
        "{body}"
    );

    let (status, got) = alices_schedule(&f, "GET", &agent_id, None).await;
    assert_eq!((status, &got), (200, &body));
    // An admin reads it too; someone else learns nothing.
    let (status, _) = call(&f, "GET", &agent_id, "schedule", Who::Admin("root"), None).await;
    assert_eq!(status, 200);
    let (status, problem) =
        call(&f, "GET", &agent_id, "schedule", Who::User("mallory"), None).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (404, Some("AGENT_NOT_FOUND")),
        "{problem}"
    );

    // The sparse index holds it: due by its next occurrence, not before.
    let due = store
        .due_schedules(DueQuery::until(at(next_wake).min(at(next_sleep)), 10))
        .await
        .unwrap();
    assert_eq!(due.records.len(), 1);
    let due = store.due_schedules(DueQuery::until(now, 10)).await.unwrap();
    assert!(due.records.is_empty(), "nothing due yet: {due:?}");

    let (status, _) = alices_schedule(&f, "DELETE", &agent_id, None).await;
    assert_eq!(status, 204);
    let (status, problem) = alices_schedule(&f, "GET", &agent_id, None).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (404, Some("SCHEDULE_NOT_FOUND"))
    );
    // Removing what is not there is still a 204 (DELETE is idempotent).
    let (status, _) = alices_schedule(&f, "DELETE", &agent_id, None).await;
    assert_eq!(status, 204);
}

/// A bad zone, a bad expression, one that never fires, an unknown field: 422 (or 400 for the
/// body's shape) naming what is wrong; a sleep schedule on a temporary agent is NOT_SLEEPABLE.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_schedules_are_refused_naming_the_field() {
    let (store, world, _) = deployed("schedule-refusals", Duration::from_millis(50)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Data helper").await;

    // A schedule in `zone` with one expression, `key`: `expression`.
    let zoned = |zone: &str, key: &str, expression: &str| {
        let mut body = json!({"timezone": zone});
        body[key] = expression.into();
        body
    };
    let cases = [
        (json!({"wake": "0 9 * * *"}), 422, "timezone"),
        (zoned("Mars/Olympus", "wake", "0 9 * * *"), 422, "timezone"),
        (zoned("+02:00", "wake", "0 9 * * *"), 422, "timezone"),
        (zoned("Europe/Berlin", "wake", "0 25 * * *"), 422, "wake"),
        (zoned("Europe/Berlin", "wake", "0 9 * *"), 422, "wake"),
        (zoned("Europe/Berlin", "sleep", "@daily"), 422, "sleep"),
        (zoned("Europe/Berlin", "sleep", "0 0 31 2 *"), 422, "sleep"),
        // More often than hourly: a snapshot or a Resume each time.
        (zoned("UTC", "wake", "*/30 * * * *"), 422, "wake"),
        (zoned("UTC", "sleep", "0,30 18 * * *"), 422, "sleep"),
        (
            json!({"timezone": "UTC", "wake": "* * * * *", "sleep": "* * * * *"}),
            422,
            "wake",
        ),
        // A wake and a sleep in the same minute.
        (
            json!({"timezone": "UTC", "wake": "0 9 * * *", "sleep": "0 9 * * *"}),
            422,
            "sleep",
        ),
        (
            json!({"timezone": "Europe/Berlin", "wake": "0 9 * * MON", "sleep": "0 9 1 * *"}),
            422,
            "sleep",
        ),
    ];
    for (body, status, field) in cases {
        let (got, problem) = alices_schedule(&f, "PUT", &agent_id, Some(body.clone())).await;
        assert_eq!(
            (got, problem["field"].as_str()),
            (status, Some(field)),
            "{body}: {problem}"
        );
        assert_eq!(problem["code"], "INVALID_REQUEST", "{problem}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(field),
            "the detail names the field: {detail}"
        );
    }
    let (status, problem) = alices_schedule(
        &f,
        "PUT",
        &agent_id,
        Some(json!({"timezone": "Europe/Berlin", "wakes": "0 9 * * *"})),
    )
    .await;
    assert_eq!(status, 400, "an unknown field is refused: {problem}");
    let (status, _) = alices_schedule(&f, "GET", &agent_id, None).await;
    assert_eq!(status, 404, "nothing refused was stored");

    // A temporary agent: created awake on the temporary Tool through create is the real path;
    // here its record says temporary.
    let temp = world.asleep_agent("alice", "Scratch").0;
    store
        .update(
            &key(&temp),
            &snapwake::store::Condition::Absent,
            &snapwake::store::Changes {
                state: Some(snapwake::domain::WakeState::Asleep),
                describe: Some(snapwake::domain::Description {
                    owner: Some("alice".into()),
                    retention: Some(snapwake::domain::Retention::Temporary),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let (status, problem) = alices_schedule(
        &f,
        "PUT",
        &temp,
        Some(json!({"timezone": "UTC", "wake": "0 9 * * *", "sleep": "0 18 * * *"})),
    )
    .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (422, Some("NOT_SLEEPABLE")),
        "{problem}"
    );
    // A wake-only schedule is fine for it.
    put_schedule(&f, &temp, json!({"timezone": "UTC", "wake": "0 9 * * *"})).await;

    // No such agent: 404.
    let (status, _) = alices_schedule(
        &f,
        "PUT",
        &snapwake::identity::caller::mint("alice"),
        Some(json!({"timezone": "UTC", "wake": "0 9 * * *"})),
    )
    .await;
    assert_eq!(status, 404);
}

/// The list shows each agent's schedule (the page's and one agent's view); deleting the agent
/// deletes its schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_shows_schedules_and_a_delete_takes_them_along() {
    let (store, world, _) = deployed("schedule-list", Duration::from_millis(50)).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let agent_id = asleep_agent(&world, &api.resume, "Data helper").await;
    let other = asleep_agent(&world, &api.resume, "Reviewer").await;
    put_schedule(
        &api.resume,
        &agent_id,
        weekdays("30 8 * * MON-FRI", "0 19 * * MON-FRI", "Europe/Berlin"),
    )
    .await;

    let (status, one) = answer(
        &api.handle(alices_request(
            "GET",
            &format!("/v1/agents/codex/{agent_id}"),
        ))
        .await,
    );
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["schedule"]["timezone"], "Europe/Berlin", "{one}");
    assert!(one["schedule"]["next_wake_at"].is_string(), "{one}");
    let (status, listing) = answer(&api.handle(alices_request("GET", "/v1/agents")).await);
    assert_eq!(status, 200, "{listing}");
    let agents = listing["agents"].as_array().unwrap();
    let find = |id: &str| {
        agents
            .iter()
            .find(|a| a["agent_id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(find(&agent_id)["schedule"]["wake"], "30 8 * * MON-FRI");
    assert!(find(&other)["schedule"].is_null(), "no schedule, null");
    assert!(find(&agent_id)["open_url"].is_null(), "asleep: no link");

    let (status, body) = answer(
        &api.handle(alices_request(
            "DELETE",
            &format!("/v1/agents/codex/{agent_id}"),
        ))
        .await,
    );
    assert_eq!(status, 204, "{body}");
    assert!(
        store.get_schedule(&key(&agent_id)).await.unwrap().is_none(),
        "the schedule went with it"
    );
    let (status, problem) = alices_schedule(&api.resume, "GET", &agent_id, None).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (410, Some("AGENT_GONE")),
        "{problem}"
    );
}

/// The rules a schedule keeps are the deployment's: hourly by default (on the hour is fine), a
/// wider floor refuses what the default allows, and none at all allows every minute; a wake and
/// a sleep at the same time of day on days that never meet are fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_floor_of_a_schedule_is_the_deployments() {
    let (store, world, _) = deployed("schedule-floor", Duration::from_millis(50)).await;
    let f = resume_fn(store.clone(), world.client(), quick_wake());
    let agent_id = asleep_agent(&world, &f, "Floor").await;
    let hourly = json!({"timezone": "UTC", "wake": "0 * * * *"});
    put_schedule(&f, &agent_id, hourly.clone()).await;
    let apart = json!({"timezone": "UTC", "wake": "0 9 * * MON", "sleep": "0 9 * * TUE"});
    put_schedule(&f, &agent_id, apart).await;

    let two_hours = Resume {
        schedules: snapwake::schedule::ScheduleRules {
            min_interval: Duration::from_secs(7200),
            ..Default::default()
        },
        ..resume_fn(store.clone(), world.client(), quick_wake())
    };
    let (status, problem) = alices_schedule(&two_hours, "PUT", &agent_id, Some(hourly)).await;
    assert_eq!((status, problem["field"].as_str()), (422, Some("wake")));
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("60 min apart") && detail.contains("every 2 hours"),
        "{detail}"
    );
    put_schedule(
        &two_hours,
        &agent_id,
        json!({"timezone": "UTC", "wake": "0 */2 * * *"}),
    )
    .await;

    let none = Resume {
        schedules: snapwake::schedule::ScheduleRules {
            min_interval: Duration::ZERO,
            ..Default::default()
        },
        ..resume_fn(store.clone(), world.client(), quick_wake())
    };
    let every_minute = json!({"timezone": "UTC", "wake": "* * * * *"});
    let set = put_schedule(&none, &agent_id, every_minute).await;
    assert_eq!(set["wake"], "* * * * *");
    // Without a floor, a wake and a sleep in one minute are still refused.
    let (status, problem) = alices_schedule(
        &none,
        "PUT",
        &agent_id,
        Some(json!({"timezone": "UTC", "wake": "* * * * *", "sleep": "*/5 * * * *"})),
    )
    .await;
    assert_eq!(
        (status, problem["field"].as_str()),
        (422, Some("sleep")),
        "{problem}"
    );
}

/// An agent AgentKit knows and snapwake has no record of yet (made outside snapwake, not yet
/// indexed): the schedule routes answer for it as resume would, and the list shows it with its
/// schedule. An agent nowhere is a 404 on every route, and nothing is written for it; someone
/// else's agent is a 404 before AgentKit is asked anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_the_table_does_not_know_yet_has_a_schedule_like_any_other() {
    let (store, world, _) = deployed("schedule-unindexed", Duration::from_millis(50)).await;
    let api = Api::new(store.clone(), world.client(), identity());
    let f = &api.resume;

    // Asleep, known by its snapshot only.
    let (asleep, _) = world.asleep_agent("alice", "Made elsewhere");
    assert!(store.get(&key(&asleep)).await.unwrap().is_none());
    let (status, problem) = alices_schedule(f, "GET", &asleep, None).await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (404, Some("SCHEDULE_NOT_FOUND")),
        "the agent is found; it has no schedule: {problem}"
    );
    let set = put_schedule(
        f,
        &asleep,
        weekdays("30 8 * * MON-FRI", "0 19 * * MON-FRI", "UTC"),
    )
    .await;
    let (status, got) = alices_schedule(f, "GET", &asleep, None).await;
    assert_eq!((status, &got), (200, &set));
    let record = store.get(&key(&asleep)).await.unwrap().expect("indexed");
    assert_eq!(record.description.owner.as_deref(), Some("alice"));
    assert_eq!(
        record.description.display_name.as_deref(),
        Some("Made elsewhere")
    );
    assert_eq!(record.state, snapwake::domain::WakeState::Asleep);
    assert_eq!(record.snapshots.len(), 1, "{record:?}");

    // Awake, known by its live session only.
    let awake = snapwake::identity::caller::mint("alice");
    let session = world.live_session("alice", &awake);
    let (status, _) = alices_schedule(f, "DELETE", &awake, None).await;
    assert_eq!(status, 204, "found, and nothing to remove");
    let record = store.get(&key(&awake)).await.unwrap().expect("indexed");
    assert_eq!(record.state, snapwake::domain::WakeState::Awake);
    assert_eq!(record.session_id.as_deref(), Some(session.as_str()));

    // The list shows both, the first with its schedule.
    let (status, listing) = answer(&api.handle(alices_request("GET", "/v1/agents")).await);
    assert_eq!(status, 200, "{listing}");
    let agents = listing["agents"].as_array().unwrap();
    let listed = |id: &str| agents.iter().find(|a| a["agent_id"] == id).cloned();
    let first = listed(&asleep).expect("listed");
    assert_eq!(first["schedule"]["wake"], "30 8 * * MON-FRI", "{first}");
    assert!(listed(&awake).is_some(), "{listing}");

    // Nowhere: 404 on every route, and no record.
    let nowhere = snapwake::identity::caller::mint("alice");
    for (method, body) in [
        ("GET", None),
        ("PUT", Some(json!({"timezone": "UTC", "wake": "0 9 * * *"}))),
        ("DELETE", None),
    ] {
        let (status, problem) = alices_schedule(f, method, &nowhere, body).await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (404, Some("AGENT_NOT_FOUND")),
            "{method}: {problem}"
        );
    }
    assert!(store.get(&key(&nowhere)).await.unwrap().is_none());

    // Someone else's: 404, and AgentKit was not asked.
    let calls = world.agentkit_calls();
    let (mallorys, _) = world.asleep_agent("mallory", "Not alice's");
    let (status, _) = alices_schedule(f, "GET", &mallorys, None).await;
    assert_eq!(status, 404);
    assert_eq!(world.agentkit_calls(), calls);
}
