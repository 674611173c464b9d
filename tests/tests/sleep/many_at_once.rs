//! Many at once: 50 sleeps of one agent take one snapshot and end one session, a sleep racing
//! 50 resumes ends awake from the new snapshot, and a delete while sleeping is 409.

use super::*;

// ---------------------------------------------------------------------------------------------
// Many at once

/// `verb` of `agent_id` by 50 callers at once, each settled as a client would: their tasks.
fn fifty_at_once<S, K>(
    f: &Arc<Resume<S, K>>,
    agent_id: &str,
    verb: &'static str,
) -> Vec<tokio::task::JoinHandle<(u16, Value, u32)>>
where
    S: AgentStore + snapwake::store::ScheduleStore + 'static,
    K: AgentKit + 'static,
{
    (0..50)
        .map(|_| {
            let f = f.clone();
            let agent_id = agent_id.to_string();
            tokio::spawn(async move { settle(&f, &agent_id, verb).await })
        })
        .collect()
}

/// 50 sleeps of one awake agent at once: one CreateSessionSnapshot, one DeleteSession, and
/// every caller answered 200 asleep (some after a 202).
///
/// The lease is production's (60 s): with the quick 5 s one, a holder stalled on a loaded CI
/// machine between its acquire and naming its snapshot lapsed, and the caller that rightly
/// took the agent over sent a second snapshot. A lapsed holder's takeover is the subject of
/// the lock's own tests; this one is about fifty callers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_sleeps_at_once_take_one_snapshot_and_end_one_session() {
    let (store, world, ctl) = deployed("sleep-fifty", Duration::ZERO).await;
    ctl.set_snapshot_ready_delay(Duration::from_millis(500));
    let settings = WakeSettings {
        lock: quick_lock(Duration::from_secs(60)),
        ..quick_wake()
    };
    let f = Arc::new(resume_fn(store.clone(), world.client(), settings));
    let (agent_id, session) = awake_agent(&world, &f, "Busy").await;
    let before = world.snapshots_of(&agent_id);

    let tasks = fifty_at_once(&f, &agent_id, "sleep");
    let mut slept = 0;
    for t in tasks {
        let (status, body, _) = t.await.unwrap();
        assert_eq!(
            (status, body["state"].as_str()),
            (200, Some("asleep")),
            "{body}"
        );
        slept += usize::from(body["slept"] == true);
    }
    assert!(slept >= 1, "at least the holder says it slept");
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(received(&ctl, "DeleteSession"), 1);
    assert_eq!(new_snapshots(&world, &agent_id, &before).len(), 1);
    assert!(!ctl.session(&session).is_some_and(|s| s.is_active()));
}

/// A sleep in flight and 50 resumes arriving while it snapshots: the resumes wait for the
/// sleep to settle, then wake the agent once from the new snapshot. No error answers, one
/// CreateSessionSnapshot, one Resume, one live session at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleep_racing_fifty_resumes_ends_awake_from_the_new_snapshot() {
    let (store, world, ctl) = deployed("sleep-race", Duration::from_millis(200)).await;
    let f = Arc::new(resume_fn(store.clone(), world.client(), quick_wake()));
    let (agent_id, _) = awake_agent(&world, &f, "Racer").await;
    let before = world.snapshots_of(&agent_id);
    ctl.reset_counters();
    ctl.set_snapshot_ready_delay(Duration::from_millis(800));

    // The sleeper is held until its sleep settles (`Prefer: wait`): with short requests it
    // could come back only after the resumes had woken the agent again, and learn of a wake
    // (409), not of its sleep.
    let sleep = tokio::spawn({
        let f = f.clone();
        let agent_id = agent_id.clone();
        async move { settle_with(&f, &agent_id, "sleep", Some(20)).await }
    });
    // The resumes arrive once the sleep holds the agent.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = store.get(&key(&agent_id)).await.unwrap().unwrap();
        if r.state == WakeState::Sleeping {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the sleep never held the agent"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let resumes = fifty_at_once(&f, &agent_id, "resume");
    let (status, body, _) = sleep.await.unwrap();
    assert_eq!(
        (status, body["slept"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    let mut sessions = std::collections::BTreeSet::new();
    for t in resumes {
        let (status, body, _) = t.await.unwrap();
        assert_eq!(
            (status, body["state"].as_str()),
            (200, Some("awake")),
            "{body}"
        );
        // Joiners answer from the record: named, with the snapshots it summarises.
        assert_eq!(body["display_name"], "Racer", "{body}");
        assert!(
            body["snapshots"].as_array().is_some_and(|s| s.len() >= 2),
            "{body}"
        );
        sessions.insert(body["session"]["session_id"].as_str().unwrap().to_string());
    }
    let new = new_snapshots(&world, &agent_id, &before);
    assert_eq!(new.len(), 1);
    assert_eq!(received(&ctl, "CreateSessionSnapshot"), 1);
    assert_eq!(received(&ctl, "ResumeSessionFromSnapshot"), 1);
    assert_eq!(
        ctl.counters().resumes_of(&new[0]),
        1,
        "from the new snapshot"
    );
    let live = live_sessions(&ctl, &agent_id);
    assert_eq!(live.len(), 1);
    assert_eq!(
        sessions.into_iter().collect::<Vec<_>>(),
        live,
        "everyone got that session"
    );
}

/// A delete and a keepalive arriving while the agent sleeps answer 409; once it is asleep,
/// the delete goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_while_sleeping_is_409() {
    let (store, world, ctl) = deployed("sleep-delete", Duration::ZERO).await;
    // A wait just above the client's request timeout (2 s): a Resume or a snapshot is sent.
    let wake = WakeSettings {
        wait: Duration::from_millis(2500),
        ..quick_wake()
    };
    let f = resume_fn(store.clone(), world.client(), wake.clone());
    let (agent_id, session) = awake_agent(&world, &f, "Doomed").await;
    ctl.set_snapshot_ready_delay(Duration::from_secs(600));
    let (status, body) = post(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (202, Some("sleeping")),
        "{body}"
    );
    assert_eq!(body["wake"]["state"], "sleeping", "{body}");
    // Lists and the agent's own page say so too (and `state=sleeping` filters on it).
    let list = list_fn(
        store.clone(),
        world.client(),
        list_settings(wake.lock.clone()),
    );
    let (status, listed) = answer(
        &list
            .handle(request_query(
                "GET",
                "/v1/agents",
                &[("state", "sleeping")],
                Who::User("alice"),
            ))
            .await,
    );
    assert_eq!(status, 200, "{listed}");
    let ids: Vec<_> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, std::slice::from_ref(&agent_id), "{listed}");
    let one = format!("/v1/agents/codex/{agent_id}");
    let (status, single) = answer(&list.handle(alices_request("GET", &one)).await);
    assert_eq!(
        (status, single["state"].as_str()),
        (200, Some("sleeping")),
        "{single}"
    );

    let delete = delete_fn(store.clone(), world.client(), delete_settings(&wake));
    let path = format!("/v1/agents/codex/{agent_id}");
    let (status, body) = answer(&delete.handle(alices_request("DELETE", &path)).await);
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("AGENT_BUSY")),
        "{body}"
    );
    assert!(ctl.session(&session).unwrap().is_active(), "nothing ended");

    // The snapshot becomes Ready; the next sleep call finishes, then the delete works.
    ctl.advance(Duration::from_secs(601));
    let (status, body, _) = settle(&f, &agent_id, "sleep").await;
    assert_eq!(
        (status, body["state"].as_str()),
        (200, Some("asleep")),
        "{body}"
    );
    let (status, _) = answer(&delete.handle(alices_request("DELETE", &path)).await);
    assert_eq!(status, 204);
}
