//! Keepalive end to end: API Gateway v2 requests into the resume function, agent records on
//! DynamoDB Local, AgentKit simulated over HTTP. `POST /v1/agents/{kind}/{agent_id}/keepalive`
//! `{"ttl_s"}` makes the live session last `ttl_s` more seconds from now, measured on
//! AgentKit's (the simulator's) clock; the record's copy of the expiry follows, so an agent
//! kept alive is not taken for expired at its old time. Out-of-range TTLs and bad bodies are
//! refused before anything reaches AgentKit; an agent without a live session, deleted, or held
//! by a sleep is refused too.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::AgentKitClient;
use snapwake::domain::{AgentKey, Kind, WakeState};
use snapwake::identity::usid;
use snapwake::store::dynamo::DynamoStore;
use snapwake::store::AgentStore;
use snapwake_sim::{SeedSession, SimControl};
use snapwake_tests::*;
use time::OffsetDateTime;

type DynamoApi = Api<Arc<DynamoStore>, AgentKitClient>;

const ALICE: Who<'static> = Who::User("alice");
const HOUR: Duration = Duration::from_secs(3600);

/// The simulator, a fresh table with the registry, and every function over them.
async fn setup(test: &str) -> (World, Arc<DynamoStore>, DynamoApi) {
    let world = World::start(Duration::ZERO).await;
    let store = Arc::new(dynamo_store(test).await);
    world.register(&store).await;
    let api = Api::new(store.clone(), world.client(), identity());
    (world, store, api)
}

/// `method path` by `who` with `body`, through the dispatcher.
async fn call(
    api: &DynamoApi,
    method: &str,
    path: &str,
    who: Who<'_>,
    body: Option<&str>,
) -> lambda_http::Response<lambda_http::Body> {
    api.handle(request(method, path, who, body)).await
}

/// `POST …/{verb}` on Alice's codex agent `agent_id`.
async fn post(
    api: &DynamoApi,
    agent_id: &str,
    verb: &str,
    body: Option<&str>,
) -> lambda_http::Response<lambda_http::Body> {
    let path = format!("/v1/agents/codex/{agent_id}/{verb}");
    call(api, "POST", &path, ALICE, body).await
}

/// A keepalive of `ttl_s` by Alice.
async fn keepalive(api: &DynamoApi, agent_id: &str, ttl_s: u64) -> (u16, Value) {
    let body = format!(r#"{{"ttl_s":{ttl_s}}}"#);
    let resp = post(api, agent_id, "keepalive", Some(&body)).await;
    let (status, body) = answer(&resp);
    if status == 200 {
        // The ETag header is the record's version, like the body's `etag`.
        assert_eq!(
            header_of(&resp, "etag").map(str::to_string),
            body["etag"].as_str().map(str::to_string),
            "{body}"
        );
    }
    (status, body)
}

/// An awake agent of Alice, woken by a resume (so it has a record): (agent id, session id).
async fn awake_agent(world: &World, api: &DynamoApi) -> (String, String) {
    let (agent_id, _) = world.asleep_agent("alice", "Kept alive");
    let (status, body) = answer(&post(api, &agent_id, "resume", None).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "awake", "{body}");
    let session = body["session"]["session_id"].as_str().unwrap().to_string();
    (agent_id, session)
}

fn sent_ttls(ctl: &SimControl) -> u64 {
    ctl.counters().received("SetSessionTtl")
}

fn ts(s: &str) -> OffsetDateTime {
    snapwake::timestamp::parse(s).unwrap_or_else(|| panic!("not a timestamp: {s:?}"))
}

/// The `session.expire_at` of an answer.
fn expire_at(body: &Value) -> OffsetDateTime {
    ts(body["session"]["expire_at"]
        .as_str()
        .unwrap_or_else(|| panic!("no session.expire_at: {body}")))
}

/// The simulator's own idea of the session's expiry.
fn sim_expiry(ctl: &SimControl, session_id: &str) -> OffsetDateTime {
    let s = ctl
        .session(session_id)
        .unwrap_or_else(|| panic!("session {session_id} is gone"));
    ts(s.expire_at.as_deref().unwrap())
}

/// The record's copy of the session expiry.
async fn recorded_expiry(store: &DynamoStore, agent_id: &str) -> Option<String> {
    store
        .get(&AgentKey::new(Kind::Codex, agent_id))
        .await
        .unwrap()
        .and_then(|r| r.session_expire_at)
}

/// A keepalive of `ttl_s` that must answer 200 and move the expiry to `ttl_s` from the
/// simulator's now (AgentKit writes whole seconds): answers the new expiry.
async fn kept_alive(
    api: &DynamoApi,
    ctl: &SimControl,
    agent_id: &str,
    session_id: &str,
    ttl_s: u64,
) -> OffsetDateTime {
    let before = ctl.now().unix_timestamp();
    let (status, body) = keepalive(api, agent_id, ttl_s).await;
    let after = ctl.now().unix_timestamp();
    assert_eq!(status, 200, "keepalive {ttl_s}: {body}");
    assert_no_endpoint(&body);
    assert_eq!(body["ttl_s"], ttl_s, "{body}");
    assert_eq!(body["state"], "awake", "{body}");
    assert_eq!(body["agent_id"], agent_id, "{body}");
    assert_eq!(body["session"]["session_id"], session_id, "{body}");
    let new = expire_at(&body);
    let ttl = ttl_s as i64;
    assert!(
        (before + ttl..=after + ttl).contains(&new.unix_timestamp()),
        "keepalive {ttl_s}: expire_at {new} is not {ttl_s} s after the simulator's now \
         ({before}..={after})"
    );
    assert_eq!(
        sim_expiry(ctl, session_id),
        new,
        "AgentKit's session expires when the answer says"
    );
    new
}

/// No session Endpoint (nor its auth query string) in an answer.
fn assert_no_endpoint(body: &Value) {
    let text = body.to_string();
    assert!(
        !text.to_ascii_lowercase().contains("endpoint")
            && !text.contains("sandbox.example")
            && !text.contains("auth="),
        "an answer carries a session endpoint: {text}"
    );
}

/// A problem+json answer of `status` and `code`.
fn assert_problem(resp: &lambda_http::Response<lambda_http::Body>, status: u16, code: &str) {
    if let Some(fault) = problem_fault(resp, status, None) {
        panic!("not a {status} problem: {fault}");
    }
    let (_, body) = answer(resp);
    assert_eq!(body["code"], code, "{body}");
    assert_no_endpoint(&body);
}

#[tokio::test]
async fn keepalive_moves_the_expiry_by_the_ttl_on_agentkits_clock_each_time() {
    let (world, store, api) = setup("keepalive-moves").await;
    let ctl = world.sim.control();
    let (agent_id, session_id) = awake_agent(&world, &api).await;
    let created = sim_expiry(&ctl, &session_id);

    let first = kept_alive(&api, &ctl, &agent_id, &session_id, 3600).await;
    assert!(first < created, "an hour from now is before the 8 h expiry");
    assert_eq!(sent_ttls(&ctl), 1);
    assert_eq!(
        recorded_expiry(&store, &agent_id).await.map(|s| ts(&s)),
        Some(first),
        "the record follows"
    );

    // Each keepalive counts from the simulator's now, wherever its clock is.
    let mut last = first;
    for (round, (advance, ttl_s)) in [(600, 7200), (1800, 28_800), (3600, 60)]
        .into_iter()
        .enumerate()
    {
        ctl.advance(Duration::from_secs(advance));
        let new = kept_alive(&api, &ctl, &agent_id, &session_id, ttl_s).await;
        assert_ne!(new, last, "round {round}: the expiry moved");
        assert_eq!(sent_ttls(&ctl), 2 + round as u64);
        assert_eq!(
            recorded_expiry(&store, &agent_id).await.map(|s| ts(&s)),
            Some(new),
            "round {round}: the record follows"
        );
        last = new;
    }

    // What a reader sees afterwards is the new expiry, whether it asks the list function
    // (live) or resumes (which may answer from the record).
    let resp = call(
        &api,
        "GET",
        &format!("/v1/agents/codex/{agent_id}"),
        ALICE,
        None,
    )
    .await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 200, "{body}");
    assert_eq!(expire_at(&body), last, "{body}");
    assert_no_endpoint(&body);
    let (status, body) = answer(&post(&api, &agent_id, "resume", None).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resumed"], false, "{body}");
    assert_eq!(body["session"]["session_id"], session_id.as_str());
    assert_eq!(expire_at(&body), last, "{body}");
    assert_no_endpoint(&body);
    // An admin's page of everyone comes from the records: it shows the new expiry too.
    let mut ev = event("GET", "/v1/agents", Who::Admin("root"), None);
    ev["rawQueryString"] = "owner=*&limit=100".into();
    let (status, page) = answer(&api.handle(from_event(&ev)).await);
    assert_eq!(status, 200, "{page}");
    let listed = page["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|v| v["agent_id"] == agent_id.as_str()))
        .unwrap_or_else(|| panic!("the agent is listed: {page}"));
    assert_eq!(expire_at(listed), last, "{listed}");
    assert_no_endpoint(&page);
}

#[tokio::test]
async fn an_agent_kept_alive_does_not_expire_at_its_old_time() {
    let (world, store, api) = setup("keepalive-outlives").await;
    let ctl = world.sim.control();
    let (agent_id, session_id) = awake_agent(&world, &api).await;
    let old = sim_expiry(&ctl, &session_id);
    assert!(old > ctl.now() + 7 * HOUR, "a session lives 8 h");

    // Two hours in, keep it alive for eight more: it now ends two hours after it would have.
    ctl.advance(2 * HOUR);
    let new = kept_alive(&api, &ctl, &agent_id, &session_id, 28_800).await;
    assert!(new - old >= time::Duration::seconds(7190), "{old} → {new}");

    // Past the old expiry, before the new one: the session is still active, and a resume
    // answers with it, awake all along.
    ctl.advance(7 * HOUR);
    assert!(ctl.now() > old && ctl.now() < new);
    let live = ctl
        .session(&session_id)
        .expect("the session outlived its old expiry");
    assert_eq!(live.status.as_deref(), Some("Ready"));
    let (status, body) = answer(&post(&api, &agent_id, "resume", None).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resumed"], false, "{body}");
    assert_eq!(body["state"], "awake", "{body}");
    assert_eq!(body["session"]["session_id"], session_id.as_str(), "{body}");
    assert_eq!(expire_at(&body), new, "{body}");
    assert_no_endpoint(&body);
    assert_eq!(ctl.counters().received("ResumeSessionFromSnapshot"), 1);

    // Past the new expiry: it has ended (into a snapshot, on a recoverable Tool), and a
    // keepalive has nothing left to keep alive.
    ctl.advance(HOUR + Duration::from_secs(5));
    assert!(ctl.now() > new);
    assert!(
        ctl.session(&session_id).is_none(),
        "the session ended at its new expiry"
    );
    assert!(ctl
        .sessions()
        .iter()
        .all(|s| s.user_session_id.as_deref() != Some(agent_id.as_str())));
    let expired: Vec<_> = ctl
        .snapshots()
        .into_iter()
        .filter(|s| s.session_id.as_deref() == Some(session_id.as_str()))
        .collect();
    assert_eq!(
        expired.len(),
        1,
        "the expiry left one snapshot: {expired:?}"
    );
    assert_eq!(expired[0].reason.as_deref(), Some("Expired"));
    assert_eq!(expired[0].created_at.as_deref().map(ts), Some(new));

    let sent = sent_ttls(&ctl);
    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");
    assert_eq!(sent_ttls(&ctl), sent, "nothing to send SetSessionTtl for");
    assert!(recorded_expiry(&store, &agent_id).await.is_some());
}

#[tokio::test]
async fn out_of_range_ttls_and_bad_bodies_are_refused_before_agentkit() {
    let (world, _store, api) = setup("keepalive-range").await;
    let ctl = world.sim.control();
    let (agent_id, session_id) = awake_agent(&world, &api).await;
    let expiry = sim_expiry(&ctl, &session_id);

    let cases: Vec<(&str, Option<String>, u16)> = vec![
        ("ttl 0", Some(r#"{"ttl_s":0}"#.into()), 422),
        ("ttl 1", Some(r#"{"ttl_s":1}"#.into()), 422),
        ("ttl 59", Some(r#"{"ttl_s":59}"#.into()), 422),
        ("ttl max + 1", Some(r#"{"ttl_s":28801}"#.into()), 422),
        ("ttl a week", Some(r#"{"ttl_s":604800}"#.into()), 422),
        (
            "ttl u64::MAX",
            Some(r#"{"ttl_s":18446744073709551615}"#.into()),
            422,
        ),
        (
            "ttl u64::MAX + 1",
            Some(r#"{"ttl_s":18446744073709551616}"#.into()),
            400,
        ),
        (
            "ttl 1e30",
            Some(r#"{"ttl_s":1000000000000000000000000000000}"#.into()),
            400,
        ),
        ("ttl negative", Some(r#"{"ttl_s":-60}"#.into()), 400),
        ("ttl fractional", Some(r#"{"ttl_s":60.5}"#.into()), 400),
        (
            "ttl a fraction in an exponent",
            Some(r#"{"ttl_s":36.05e1}"#.into()),
            400,
        ),
        ("ttl a string", Some(r#"{"ttl_s":"3600"}"#.into()), 400),
        ("ttl null", Some(r#"{"ttl_s":null}"#.into()), 400),
        ("ttl a bool", Some(r#"{"ttl_s":true}"#.into()), 400),
        ("ttl an array", Some(r#"{"ttl_s":[3600]}"#.into()), 400),
        ("no ttl", Some("{}".into()), 400),
        ("misspelt", Some(r#"{"ttl":3600}"#.into()), 400),
        ("extra field", Some(r#"{"ttl_s":3600,"x":1}"#.into()), 400),
        (
            "ttl twice",
            Some(r#"{"ttl_s":3600,"ttl_s":60}"#.into()),
            400,
        ),
        ("no body", None, 400),
        ("blank body", Some("  ".into()), 400),
        ("not JSON", Some("ttl_s=3600".into()), 400),
        ("malformed", Some(r#"{"ttl_s":3600"#.into()), 400),
        ("a number", Some("3600".into()), 400),
        ("an array", Some(r#"[{"ttl_s":3600}]"#.into()), 400),
        ("null", Some("null".into()), 400),
        ("a string", Some(r#""3600""#.into()), 400),
        ("trailing garbage", Some(r#"{"ttl_s":3600} {}"#.into()), 400),
    ];
    let mut failed = Vec::new();
    for (name, body, want) in &cases {
        let resp = post(&api, &agent_id, "keepalive", body.as_deref()).await;
        let (_, answer_body) = answer(&resp);
        if let Some(fault) = problem_fault(&resp, *want, None) {
            failed.push(format!("{name}: {fault}"));
        } else if answer_body["code"] != "INVALID_REQUEST" {
            failed.push(format!("{name}: code {}", answer_body["code"]));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} failed:\n  {}",
        failed.len(),
        cases.len(),
        failed.join("\n  ")
    );
    assert_eq!(sent_ttls(&ctl), 0, "nothing refused reaches AgentKit");
    assert_eq!(
        sim_expiry(&ctl, &session_id),
        expiry,
        "the session is as it was"
    );

    // The range's bounds are in it.
    let detail = answer(&post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":59}"#)).await).1;
    let detail = detail["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("60") && detail.contains("28800"),
        "the detail says the range: {detail}"
    );
    for ttl_s in [60, 28_800] {
        kept_alive(&api, &ctl, &agent_id, &session_id, ttl_s).await;
    }
    assert_eq!(sent_ttls(&ctl), 2);
}

#[tokio::test]
async fn the_longest_ttl_is_the_configured_one() {
    let (world, _store, mut api) = setup("keepalive-max").await;
    api.resume.wake.max_ttl = HOUR;
    let ctl = world.sim.control();
    let (agent_id, session_id) = awake_agent(&world, &api).await;

    for ttl_s in [3601, 7200, 28_800] {
        let body = format!(r#"{{"ttl_s":{ttl_s}}}"#);
        let resp = post(&api, &agent_id, "keepalive", Some(&body)).await;
        assert_problem(&resp, 422, "INVALID_REQUEST");
        let detail = answer(&resp).1["detail"].as_str().unwrap().to_string();
        assert!(detail.contains("3600"), "{ttl_s}: {detail}");
    }
    assert_eq!(sent_ttls(&ctl), 0);
    kept_alive(&api, &ctl, &agent_id, &session_id, 3600).await;
    kept_alive(&api, &ctl, &agent_id, &session_id, 60).await;
    assert_eq!(sent_ttls(&ctl), 2);
}

#[tokio::test]
async fn an_agent_without_a_live_session_is_not_awake() {
    let (world, store, api) = setup("keepalive-asleep").await;
    let ctl = world.sim.control();

    // Asleep, known only to AgentKit (no record).
    let (never_woken, _) = world.asleep_agent("alice", "Asleep");
    let resp = post(&api, &never_woken, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");

    // Woken, then put to sleep: the record says asleep.
    let (agent_id, _) = awake_agent(&world, &api).await;
    let (status, body) = answer(&post(&api, &agent_id, "sleep", None).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "asleep", "{body}");
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, WakeState::Asleep);
    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");

    // Awake once, its session ended by expiry (the record still says awake).
    let (expired, session_id) = awake_agent(&world, &api).await;
    ctl.advance(9 * HOUR);
    assert!(ctl.session(&session_id).is_none());
    let resp = post(&api, &expired, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");

    assert_eq!(sent_ttls(&ctl), 0);
    // Nothing was woken by the refusals.
    for agent in [&never_woken, &agent_id, &expired] {
        assert!(ctl
            .sessions()
            .iter()
            .all(|s| s.user_session_id.as_deref() != Some(agent.as_str())));
    }
}

#[tokio::test]
async fn temporary_agents_and_agents_without_a_record_are_kept_alive_too() {
    let (world, store, api) = setup("keepalive-temporary").await;
    let ctl = world.sim.control();

    // Created temporary through the API (a record, a session on the temporary Tool).
    let resp = call(
        &api,
        "POST",
        "/v1/agents",
        ALICE,
        Some(r#"{"kind":"codex","display_name":"Scratch","retention":"temporary"}"#),
    )
    .await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["retention"], "temporary", "{body}");
    let temporary = body["agent_id"].as_str().unwrap().to_string();
    let session = body["session"]["session_id"].as_str().unwrap().to_string();
    assert_eq!(
        ctl.session(&session).unwrap().session_id.as_deref(),
        Some(session.as_str())
    );
    let new = kept_alive(&api, &ctl, &temporary, &session, 5400).await;
    assert_eq!(
        recorded_expiry(&store, &temporary).await.map(|s| ts(&s)),
        Some(new)
    );
    // (A sleep is refused it: there is no snapshot to sleep into.)
    let resp = post(&api, &temporary, "sleep", None).await;
    assert_problem(&resp, 422, "NOT_SLEEPABLE");
    assert!(ctl.session(&session).is_some());

    // A temporary session known only to AgentKit (no record): located, kept alive.
    let seeded = usid::mint("alice");
    let seeded_session = ctl
        .seed_session(SeedSession {
            tool_id: world.temporary.clone(),
            user_session_id: Some(seeded.clone()),
            metadata: vec![MetadataEntry::string("Username", "alice")],
            ..Default::default()
        })
        .unwrap();
    kept_alive(&api, &ctl, &seeded, &seeded_session, 600).await;

    // And a recoverable one the same way.
    let recoverable = usid::mint("alice");
    let recoverable_session = world.live_session("alice", &recoverable);
    kept_alive(&api, &ctl, &recoverable, &recoverable_session, 600).await;
    assert_eq!(sent_ttls(&ctl), 3);

    // Not someone else's.
    let resp = call(
        &api,
        "POST",
        &format!("/v1/agents/codex/{seeded}/keepalive"),
        Who::User("bob"),
        Some(r#"{"ttl_s":600}"#),
    )
    .await;
    assert_problem(&resp, 404, "AGENT_NOT_FOUND");
    assert_eq!(sent_ttls(&ctl), 3);
}

#[tokio::test]
async fn a_deleted_agent_is_gone() {
    let (world, _store, api) = setup("keepalive-deleted").await;
    let ctl = world.sim.control();
    let (agent_id, _) = awake_agent(&world, &api).await;
    let resp = call(
        &api,
        "DELETE",
        &format!("/v1/agents/codex/{agent_id}"),
        ALICE,
        None,
    )
    .await;
    assert_eq!(resp.status().as_u16(), 204, "{:?}", answer(&resp).1);
    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 410, "AGENT_GONE");
    assert_eq!(sent_ttls(&ctl), 0);
}

#[tokio::test]
async fn an_agent_held_by_a_sleep_is_busy() {
    let (world, store, api) = setup("keepalive-sleeping").await;
    let ctl = world.sim.control();
    let (agent_id, session_id) = awake_agent(&world, &api).await;
    let expiry = sim_expiry(&ctl, &session_id);

    // A snapshot that takes ten (simulated) minutes: the sleep's budget ends first.
    ctl.set_snapshot_ready_delay(Duration::from_secs(600));
    let resp = post(&api, &agent_id, "sleep", None).await;
    let (status, body) = answer(&resp);
    assert_eq!(status, 202, "{body}");
    let record = store
        .get(&AgentKey::new(Kind::Codex, &agent_id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, WakeState::Sleeping);

    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":3600}"#)).await;
    assert_problem(&resp, 409, "AGENT_BUSY");
    let retry_after: u64 = header_of(&resp, "retry-after")
        .expect("a 409 says when to ask again")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "Retry-After {retry_after}");
    assert_eq!(sent_ttls(&ctl), 0, "nothing was sent to AgentKit");
    assert_eq!(sim_expiry(&ctl, &session_id), expiry);
    assert_eq!(
        store
            .get(&AgentKey::new(Kind::Codex, &agent_id))
            .await
            .unwrap()
            .unwrap()
            .version,
        record.version,
        "a refused keepalive writes nothing"
    );

    // Once the snapshot is Ready the sleep ends the session: nothing to keep alive.
    ctl.advance(Duration::from_secs(601));
    let (status, body) = answer(&post(&api, &agent_id, "sleep", None).await);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "asleep", "{body}");
    assert!(ctl.session(&session_id).is_none());
    let resp = post(&api, &agent_id, "keepalive", Some(r#"{"ttl_s":3600}"#)).await;
    assert_problem(&resp, 422, "NOT_AWAKE");
    assert_eq!(sent_ttls(&ctl), 0);
}

/// A wake, a delete or a create in flight holds the agent: a keepalive meeting one is a 409
/// (with `Retry-After`) and sends nothing, even though AgentKit already shows a live session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_held_by_a_wake_a_delete_or_a_create_is_busy() {
    let (world, store, api) = setup("keepalive-held").await;
    let ctl = world.sim.control();
    let gated = |action: &'static str| {
        let gate = Arc::new(Gate::after(world.client(), action));
        let api = Arc::new(Api::new(store.clone(), gate.clone(), identity()));
        (gate, api)
    };
    let busy = |resp: &lambda_http::Response<lambda_http::Body>, what: &str| {
        assert_problem(resp, 409, "AGENT_BUSY");
        assert!(
            header_of(resp, "retry-after").is_some_and(|v| v.parse::<u64>().is_ok()),
            "{what}: a 409 says when to ask again"
        );
    };
    let state_of = |agent_id: String| {
        let store = store.clone();
        async move {
            store
                .get(&AgentKey::new(Kind::Codex, &agent_id))
                .await
                .unwrap()
                .unwrap()
                .state
        }
    };

    // A wake caught after AgentKit resumed the agent (its new session is live).
    let (waking, _) = world.asleep_agent("alice", "Waking");
    let (gate, holder) = gated("ResumeSessionFromSnapshot");
    let wake = tokio::spawn({
        let path = format!("/v1/agents/codex/{waking}/resume");
        async move { answer(&holder.handle(request("POST", &path, ALICE, None)).await) }
    });
    gate.reached().await;
    assert_eq!(state_of(waking.clone()).await, WakeState::Waking);
    busy(
        &post(&api, &waking, "keepalive", Some(r#"{"ttl_s":600}"#)).await,
        "waking",
    );
    gate.release.notify_one();
    let (status, body) = wake.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let session = body["session"]["session_id"].as_str().unwrap().to_string();
    assert_eq!(sent_ttls(&ctl), 0);
    kept_alive(&api, &ctl, &waking, &session, 600).await;

    // A delete caught after it listed the agent's sessions (before it ended them).
    let (deleting, session) = awake_agent(&world, &api).await;
    let sent = sent_ttls(&ctl);
    let (gate, holder) = gated("ListSessions");
    let delete = tokio::spawn({
        let path = format!("/v1/agents/codex/{deleting}");
        async move { holder.handle(request("DELETE", &path, ALICE, None)).await }
    });
    gate.reached().await;
    assert_eq!(state_of(deleting.clone()).await, WakeState::Deleting);
    assert!(ctl.session(&session).is_some(), "the session is still live");
    busy(
        &post(&api, &deleting, "keepalive", Some(r#"{"ttl_s":600}"#)).await,
        "deleting",
    );
    gate.release.notify_one();
    assert_eq!(delete.await.unwrap().status().as_u16(), 204);
    assert_eq!(sent_ttls(&ctl), sent);
    let resp = post(&api, &deleting, "keepalive", Some(r#"{"ttl_s":600}"#)).await;
    assert_problem(&resp, 410, "AGENT_GONE");

    // A create caught after AgentKit created the session.
    let (gate, holder) = gated("CreateSession");
    let create = tokio::spawn(async move {
        answer(
            &holder
                .handle(request(
                    "POST",
                    "/v1/agents",
                    ALICE,
                    Some(r#"{"kind":"codex","display_name":"Creating"}"#),
                ))
                .await,
        )
    });
    gate.reached().await;
    let page = store
        .query_owner(&usid::owner_keys("alice")[0], 100, None)
        .await
        .unwrap();
    let creating: Vec<_> = page
        .records
        .iter()
        .filter(|r| r.state == WakeState::Creating)
        .collect();
    assert_eq!(creating.len(), 1, "{:?}", page.records);
    let created = creating[0].key.agent_id.clone();
    busy(
        &post(&api, &created, "keepalive", Some(r#"{"ttl_s":600}"#)).await,
        "creating",
    );
    gate.release.notify_one();
    let (status, body) = create.await.unwrap();
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["agent_id"], created.as_str());
    assert_eq!(sent_ttls(&ctl), sent);
    let session = body["session"]["session_id"].as_str().unwrap().to_string();
    kept_alive(&api, &ctl, &created, &session, 600).await;
    assert_eq!(sent_ttls(&ctl), sent + 1);
}

/// The answer is the agent as `GET /v1/agents/{kind}/{agent_id}` shows it right after (plus
/// `ttl_s`): the same retention, owner, name, session and snapshots, whether or not the agent
/// has a record yet.
#[tokio::test]
async fn the_answer_is_the_agent_as_a_read_shows_it() {
    let (world, _store, api) = setup("keepalive-view").await;
    let ctl = world.sim.control();
    let seed = |tool_id: &str, agent_id: &str| {
        ctl.seed_session(SeedSession {
            tool_id: tool_id.to_string(),
            user_session_id: Some(agent_id.to_string()),
            metadata: vec![
                MetadataEntry::string("Username", "alice"),
                MetadataEntry::string("veadk_display_name", "Seeded"),
            ],
            ..Default::default()
        })
        .unwrap()
    };

    // Woken through the API (a record that knows its snapshots).
    let (woken, _) = awake_agent(&world, &api).await;
    // Created temporary through the API (a record, no snapshots).
    let (status, body) = answer(
        &call(
            &api,
            "POST",
            "/v1/agents",
            ALICE,
            Some(r#"{"kind":"codex","display_name":"Scratch","retention":"temporary"}"#),
        )
        .await,
    );
    assert_eq!(status, 201, "{body}");
    let created = body["agent_id"].as_str().unwrap().to_string();
    // A temporary session known only to AgentKit: no record, the Tool says temporary.
    let temporary = usid::mint("alice");
    seed(&world.temporary, &temporary);
    // A recoverable agent known only to AgentKit, with a live session and an older snapshot.
    let (recoverable, snapshot) = world.asleep_agent("alice", "Seeded");
    seed(&world.recoverable, &recoverable);

    let mut failed = Vec::new();
    for (what, agent_id) in [
        ("woken through the API", &woken),
        ("created temporary", &created),
        ("temporary, no record", &temporary),
        ("recoverable with a snapshot, no record", &recoverable),
    ] {
        let (status, mut kept) = keepalive(&api, agent_id, 900).await;
        assert_eq!(status, 200, "{what}: {kept}");
        assert_eq!(kept["ttl_s"], 900);
        kept.as_object_mut().unwrap().remove("ttl_s");
        let resp = call(
            &api,
            "GET",
            &format!("/v1/agents/codex/{agent_id}"),
            ALICE,
            None,
        )
        .await;
        let (status, read) = answer(&resp);
        assert_eq!(status, 200, "{what}: {read}");
        let fields: std::collections::BTreeSet<&String> = kept
            .as_object()
            .unwrap()
            .keys()
            .chain(read.as_object().unwrap().keys())
            .collect();
        for field in fields {
            if kept[field] != read[field] {
                failed.push(format!(
                    "{what}: {field}: keepalive answered {}, a read shows {}",
                    kept[field], read[field]
                ));
            }
        }
    }
    assert!(
        ctl.snapshot(&snapshot).is_some(),
        "the recoverable agent's snapshot is still there"
    );
    assert!(failed.is_empty(), "\n  {}", failed.join("\n  "));
}

/// JSON has one number type: `3600.0` and `36e2` are the whole number 3600 (the API
/// description's conformance run sends them, as JSON Schema allows for an integer).
#[tokio::test]
async fn a_whole_number_written_as_a_float_is_a_number_of_seconds() {
    let (world, _store, api) = setup("keepalive-float").await;
    let (agent_id, _) = awake_agent(&world, &api).await;
    for body in [r#"{"ttl_s":3600.0}"#, r#"{"ttl_s":36e2}"#] {
        let (status, answered) = answer(&post(&api, &agent_id, "keepalive", Some(body)).await);
        assert_eq!(status, 200, "{body}: {answered}");
        assert_eq!(answered["ttl_s"], 3600, "{body}: {answered}");
    }
}
