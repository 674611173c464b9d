//! Authorisation and bad input, from API Gateway v2 requests: who may resume an agent and what
//! bad input answers.

use super::*;

// ---------------------------------------------------------------------------------------------
// Authorisation and bad input, from API Gateway v2 requests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_may_resume_and_what_bad_input_answers() {
    let (store, world, _) = deployed_shared("authz", Duration::ZERO).await;
    let (agent_id, _) = world.asleep_agent("alice", "Mine");
    let f = resume_fn(store.clone(), world.client(), quick());
    let call = |method: &str, p: String, who: Who<'static>, body: Option<&str>| {
        let r = request(method, &p, who, body);
        let f = &f;
        async move { answer(&f.handle(r).await) }
    };

    let (status, body) = call("POST", path(&agent_id), Who::User("mallory"), None).await;
    assert_eq!(status, 404, "another owner's agent is not found: {body}");
    assert_eq!(body["code"], "AGENT_NOT_FOUND");
    assert_eq!(body["type"], "urn:snapwake:problem:agent-not-found");
    assert!(body["request_id"].is_string());

    let (status, body) = call("POST", path(&agent_id), Who::Nobody, None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("UNAUTHENTICATED"))
    );

    let bad: Vec<(String, Option<&str>, u16)> = vec![
        ("/v1/agents/gpt/x/resume".into(), None, 400),
        ("/v1/agents/Codex/x/resume".into(), None, 400),
        (path(&"a".repeat(201)), None, 400),
        (path("a%2Fb"), None, 400),
        (path("a%00b"), None, 400),
        (path(&agent_id), Some("{not json"), 400),
        (path(&agent_id), Some("[1,2]"), 400),
        (path(&agent_id), Some(r#"{"snapshot_id": 7}"#), 400),
        (path(&agent_id), Some(r#"{"snapshot_id": "../x/y"}"#), 400),
        (
            path(&agent_id),
            Some(r#"{"snapshot_id": "snap-nope"}"#),
            422,
        ),
        (
            path("studio-alice-00000000000000000000000000000000"),
            None,
            404,
        ),
    ];
    for (p, body, want) in bad {
        let (status, answer) = call("POST", p.clone(), Who::User("alice"), body).await;
        assert_eq!(status, want, "{p} {body:?}: {answer}");
        assert!(answer["code"].is_string(), "problem+json for {p}");
    }
    let huge = format!(r#"{{"snapshot_id": "{}"}}"#, "x".repeat(17 * 1024));
    let (status, body) = call("POST", path(&agent_id), Who::User("alice"), Some(&huge)).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (413, Some("PAYLOAD_TOO_LARGE"))
    );
    let (status, _) = call("GET", path(&agent_id), Who::User("alice"), None).await;
    assert_eq!(status, 405);
    let (status, _) = call("POST", "/v1/nothing".into(), Who::User("alice"), None).await;
    assert_eq!(status, 404);

    // An admin may wake anyone's agent; the owner then finds it awake.
    let (status, body) = call("POST", path(&agent_id), Who::Admin("root"), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resumed"], true);
    assert_eq!(
        body["owner"], "alice",
        "the admin is not recorded as the owner"
    );
    let (status, body) = call("POST", path(&agent_id), Who::User("alice"), None).await;
    assert_eq!((status, body["resumed"].as_bool()), (200, Some(false)));
    assert!(
        !body.to_string().contains("auth="),
        "no session endpoint in answers"
    );

    // A delete holding the agent: 409 with Retry-After; a tombstone: 410.
    let (other, _) = world.asleep_agent("alice", "Other");
    let key = AgentKey::new(Kind::Codex, &other);
    hold(
        &store,
        &other,
        WakeState::Deleting,
        "deleter",
        now_ms() + 60_000,
    )
    .await;
    let resp = f.handle(alices_request("POST", &path(&other))).await;
    assert_eq!(resp.status().as_u16(), 409);
    assert!(resp.headers().contains_key("retry-after"));
    store
        .update(
            &key,
            &Condition::Held {
                holder: "deleter".into(),
                fence: 1,
            },
            &Changes {
                state: Some(WakeState::Gone),
                holder: Some(None),
                expires_at: Some(Some(snapwake::ambient::now_s() + 3600)),
                ..Changes::default()
            },
        )
        .await
        .unwrap();
    let (status, body) = call("POST", path(&other), Who::User("alice"), None).await;
    assert_eq!((status, body["code"].as_str()), (410, Some("AGENT_GONE")));
}
