//! The schedule routes: what a person can set, read and remove, and every refusal a clear
//! problem naming its field.

use super::*;

/// PUT answers the schedule with its next occurrences (UTC instants), GET reads it back, the
/// list shows it on the agent, DELETE removes it (204, then 404).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_is_set_read_listed_and_removed() {
    let store = dynamo_store("schedule-routes").await;
    let world = World::registered(Duration::from_millis(50), &store).await;
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
    let now = snapwake::timestamp::now_ms();
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
        .due_schedules(at(next_wake).min(at(next_sleep)), 10, None)
        .await
        .unwrap();
    assert_eq!(due.records.len(), 1);
    let due = store.due_schedules(now, 10, None).await.unwrap();
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
    let store = dynamo_store("schedule-refusals").await;
    let world = World::registered(Duration::from_millis(50), &store).await;
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
        &snapwake::identity::usid::mint("alice"),
        Some(json!({"timezone": "UTC", "wake": "0 9 * * *"})),
    )
    .await;
    assert_eq!(status, 404);
}

/// The list shows each agent's schedule (the page's and one agent's view); deleting the agent
/// deletes its schedule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_shows_schedules_and_a_delete_takes_them_along() {
    let store = dynamo_store("schedule-list").await;
    let world = World::registered(Duration::from_millis(50), &store).await;
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
