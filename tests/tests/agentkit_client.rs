//! The AgentKit client against the strict simulator over real HTTP: every action, filters,
//! pagination and its guards, errors, retries within a deadline, region fallback, and the
//! session → snapshot → resumed session lifecycle.

use std::time::Duration;

use snapwake::agentkit::retry::RetryPolicy;
use snapwake::agentkit::types::*;
use snapwake::agentkit::{list_all, AgentKitClient, AgentKitError, Credentials, Pager};
use snapwake::agentkit::{AgentKitConfig, CredentialsSource};
use snapwake::deadline::Deadline;
use snapwake_sim::{Fault, RunningSim, SeedTool, SimConfig, SimControl, Simulator};

const BEIJING: &str = "cn-beijing";
const SHANGHAI: &str = "cn-shanghai";

fn config(endpoint: &str, regions: &[&str]) -> AgentKitConfig {
    AgentKitConfig {
        endpoint: endpoint.to_string(),
        regions: regions.iter().map(|r| r.to_string()).collect(),
        credentials: CredentialsSource::Static(SimConfig::default().credentials),
        request_timeout: Duration::from_secs(5),
    }
}

/// Short backoffs keep the retry tests quick; `Retry-After` still wins when the sim sends it.
fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        base: Duration::from_millis(20),
        max_wait: Duration::from_secs(2),
    }
}

async fn start() -> (RunningSim, AgentKitClient) {
    let sim = Simulator::start(SimConfig::default()).await.unwrap();
    let client = AgentKitClient::new(
        &config(&sim.endpoint(), &[BEIJING, SHANGHAI]),
        SimConfig::default().credentials,
    )
    .unwrap()
    .with_retry_policy(fast_retries());
    (sim, client)
}

fn soon() -> Deadline {
    Deadline::after(Duration::from_secs(10))
}

fn seed_tool(ctl: &SimControl, region: &str, name: &str, snapshots: bool) -> String {
    ctl.seed_tool(
        region,
        SeedTool {
            name: name.into(),
            tool_type: "CodeEnv".into(),
            enable_snapshot: snapshots,
            ..SeedTool::default()
        },
    )
    .unwrap()
}

fn metadata(owner: &str, name: &str) -> Vec<MetadataEntry> {
    vec![
        MetadataEntry::string("Username", owner),
        MetadataEntry::string("veadk_display_name", name),
        MetadataEntry::string("veadk_creator_name", owner),
    ]
}

#[tokio::test]
async fn tool_actions_round_trip_with_name_filter_and_pages() {
    let (sim, c) = start().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let created = c
            .call(
                BEIJING,
                &CreateTool {
                    name: format!("veadk-studio-app-chat-{i}"),
                    tool_type: "CodeEnv".into(),
                    project_name: "default".into(),
                    cpu_milli: 4000,
                    memory_mb: 8192,
                    enable_snapshot: false,
                    authorizer_configuration: Some(AuthorizerConfiguration {
                        key_auth: KeyAuth {
                            api_key_name: "studio-0123456789abcdef".into(),
                            api_key_location: "Header".into(),
                        },
                    }),
                    network_configuration: Some(NetworkConfiguration {
                        enable_public_network: true,
                        enable_private_network: false,
                    }),
                    ..CreateTool::default()
                },
                soon(),
            )
            .await
            .unwrap();
        assert!(!created.tool_id.is_empty());
        ids.push(created.tool_id);
        // Stay under the simulator's 3 writes per second.
        tokio::time::sleep(Duration::from_millis(340)).await;
    }
    let tool = c
        .call(
            BEIJING,
            &GetTool {
                tool_id: ids[1].clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(tool.name.as_deref(), Some("veadk-studio-app-chat-1"));
    assert_eq!(tool.enable_snapshot, Some(false));

    c.call(
        BEIJING,
        &UpdateTool {
            tool_id: ids[1].clone(),
            enable_snapshot: Some(true),
            envs: Some(vec![EnvVar {
                key: "MODE".into(),
                value: "x".into(),
            }]),
        },
        soon(),
    )
    .await
    .unwrap();
    let tool = c
        .call(
            BEIJING,
            &GetTool {
                tool_id: ids[1].clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(tool.enable_snapshot, Some(true));
    assert_eq!(tool.envs.len(), 1);

    // Exact name filter.
    let found = c
        .call(
            BEIJING,
            &ListTools {
                project_name: "default".into(),
                filters: Some(vec![Filter::one("Name", "veadk-studio-app-chat-2")]),
                ..ListTools::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(found.tools.len(), 1);
    assert_eq!(found.tools[0].tool_id.as_deref(), Some(ids[2].as_str()));

    // Three pages of one, then the end.
    let mut pager = Pager::new(
        &c,
        BEIJING,
        ListTools {
            project_name: "default".into(),
            max_results: Some(1),
            ..ListTools::default()
        },
        10,
    );
    let mut seen = Vec::new();
    while let Some(page) = pager.next_page(soon()).await.unwrap() {
        assert!(page.len() <= 1);
        seen.extend(page.into_iter().filter_map(|t| t.tool_id));
    }
    seen.sort();
    ids.sort();
    assert_eq!(seen, ids);
    assert!(pager.is_done() && pager.next_token().is_none());
    assert_eq!(sim.control().counters().succeeded("CreateTool"), 3);
}

#[tokio::test]
async fn session_and_snapshot_actions_with_every_filter_across_pages() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    let tool = seed_tool(&ctl, BEIJING, "rec", true);
    // 12 sessions for alice (more than one page of 10), 3 for bob.
    let mut alice = Vec::new();
    for i in 0..15 {
        let owner = if i < 12 { "alice" } else { "bob" };
        let usid = format!("studio-{owner}-{i:032x}");
        let s = c
            .call(
                BEIJING,
                &CreateSession::new(&tool, &usid, metadata(owner, &format!("agent {i}"))),
                soon(),
            )
            .await
            .unwrap();
        assert_eq!(s.user_session_id.as_deref(), Some(usid.as_str()));
        if owner == "alice" {
            alice.push(s.session_id);
        }
    }
    let by_owner = ListSessions {
        tool_id: tool.clone(),
        metadata: Some(vec![MetadataFilter {
            key: "Username".into(),
            value: "alice".into(),
        }]),
        max_results: Some(5),
        ..ListSessions::default()
    };
    // list_all asks for the largest pages; walk small pages by hand too.
    let all = list_all(&c, BEIJING, by_owner.clone(), 10, soon())
        .await
        .unwrap();
    assert_eq!(all.len(), 12);
    let mut pager = Pager::new(&c, BEIJING, by_owner, 10);
    let mut pages = 0;
    let mut got = Vec::new();
    while let Some(page) = pager.next_page(soon()).await.unwrap() {
        pages += 1;
        got.extend(page.into_iter().filter_map(|s| s.session_id));
    }
    assert_eq!(pages, 3);
    got.sort();
    alice.sort();
    assert_eq!(got, alice);

    let one = c
        .call(
            BEIJING,
            &ListSessions {
                tool_id: tool.clone(),
                filters: Some(vec![Filter::one(
                    "UserSessionId",
                    format!("studio-bob-{:032x}", 13),
                )]),
                ..ListSessions::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(one.session_infos.len(), 1);
    let bob13 = one.session_infos[0].session_id.clone().unwrap();

    let got = c
        .call(
            BEIJING,
            &GetSession {
                tool_id: tool.clone(),
                session_id: bob13.clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(metadata_value(&got.metadata, "Username"), Some("bob"));

    // Expire everything: 15 snapshots appear, filterable by UserSessionId and by SessionId.
    ctl.advance(Duration::from_secs(28_801));
    let snaps = list_all(
        &c,
        BEIJING,
        ListSessionSnapshots {
            tool_id: tool.clone(),
            ..ListSessionSnapshots::default()
        },
        10,
        soon(),
    )
    .await
    .unwrap();
    assert_eq!(snaps.len(), 15);
    let by_usid = c
        .call(
            BEIJING,
            &ListSessionSnapshots {
                tool_id: tool.clone(),
                user_session_id: Some(format!("studio-bob-{:032x}", 13)),
                ..ListSessionSnapshots::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(by_usid.snapshots.len(), 1);
    let by_session = c
        .call(
            BEIJING,
            &ListSessionSnapshots {
                tool_id: tool.clone(),
                session_id: Some(bob13.clone()),
                ..ListSessionSnapshots::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(by_session.snapshots, by_usid.snapshots);

    // Delete a snapshot; deleting again is NotFound.
    let snap_id = by_usid.snapshots[0].snapshot_id.clone().unwrap();
    let del = DeleteSessionSnapshot {
        tool_id: tool.clone(),
        snapshot_id: snap_id.clone(),
    };
    assert_eq!(
        c.call(BEIJING, &del, soon()).await.unwrap().snapshot_id,
        snap_id
    );
    assert!(c
        .call(BEIJING, &del, soon())
        .await
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn expiry_on_a_recoverable_tool_leaves_a_snapshot_that_resumes_with_the_same_identity() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    let rec = seed_tool(&ctl, BEIJING, "rec", true);
    let tmp = seed_tool(&ctl, BEIJING, "tmp", false);
    let usid = "studio-alice-0123456789abcdef0123456789abcdef";
    let md = metadata("alice", "Data helper");
    let first = c
        .call(BEIJING, &CreateSession::new(&rec, usid, md.clone()), soon())
        .await
        .unwrap();
    c.call(
        BEIJING,
        &CreateSession::new(&tmp, "studio-alice-temp", md.clone()),
        soon(),
    )
    .await
    .unwrap();

    // Past the expiry and the seconds AgentKit takes to finish the expiry snapshot.
    ctl.advance(Duration::from_secs(8 * 3600 + 10));

    // The session is gone on both Tools...
    for tool in [&rec, &tmp] {
        let live = c
            .call(
                BEIJING,
                &ListSessions {
                    tool_id: tool.to_string(),
                    ..ListSessions::default()
                },
                soon(),
            )
            .await
            .unwrap();
        assert!(live.session_infos.is_empty());
    }
    // ...only the recoverable one kept a snapshot.
    let none = c
        .call(
            BEIJING,
            &ListSessionSnapshots {
                tool_id: tmp.clone(),
                ..Default::default()
            },
            soon(),
        )
        .await
        .unwrap();
    assert!(none.snapshots.is_empty());
    let snaps = c
        .call(
            BEIJING,
            &ListSessionSnapshots {
                tool_id: rec.clone(),
                user_session_id: Some(usid.into()),
                ..Default::default()
            },
            soon(),
        )
        .await
        .unwrap()
        .snapshots;
    assert_eq!(snaps.len(), 1);
    let snap = &snaps[0];
    assert!(snap.is_wakeable());
    assert_eq!(snap.reason.as_deref(), Some("Expired"));
    assert_eq!(snap.session_id.as_deref(), Some(first.session_id.as_str()));
    assert_eq!(snap.user_session_id.as_deref(), Some(usid));
    assert_eq!(
        metadata_value(&snap.session_metadata, "veadk_display_name"),
        Some("Data helper")
    );

    let snap_id = snap.snapshot_id.clone().unwrap();
    let resumed = c
        .call(
            BEIJING,
            &ResumeSessionFromSnapshot::new(&rec, &snap_id),
            soon(),
        )
        .await
        .unwrap();
    assert_ne!(resumed.session_id, first.session_id);
    let s = c
        .call(
            BEIJING,
            &GetSession {
                tool_id: rec.clone(),
                session_id: resumed.session_id.clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(s.user_session_id.as_deref(), Some(usid));
    assert_eq!(metadata_value(&s.metadata, "Username"), Some("alice"));
    assert_eq!(
        metadata_value(&s.metadata, "veadk_display_name"),
        Some("Data helper")
    );

    // No de-duplication: a second resume is a second live session.
    c.call(
        BEIJING,
        &ResumeSessionFromSnapshot::new(&rec, &snap_id),
        soon(),
    )
    .await
    .unwrap();
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&snap_id), 2);
    assert_eq!(counters.live_sessions_of(usid), 2);

    c.call(
        BEIJING,
        &DeleteSession {
            tool_id: rec.clone(),
            session_id: resumed.session_id.clone(),
        },
        soon(),
    )
    .await
    .unwrap();
    assert_eq!(ctl.counters().live_sessions_of(usid), 1);
    let gone = c
        .call(
            BEIJING,
            &GetSession {
                tool_id: rec,
                session_id: resumed.session_id,
            },
            soon(),
        )
        .await
        .unwrap_err();
    assert!(gone.is_not_found(), "{gone:?}");
}

#[tokio::test]
async fn a_forged_next_token_and_an_unknown_session_are_errors() {
    let (sim, c) = start().await;
    let tool = seed_tool(&sim.control(), BEIJING, "t", true);
    let err = c
        .call(
            BEIJING,
            &ListSessions {
                tool_id: tool.clone(),
                next_token: Some("eyJvZmZzZXQiOjEwfQ".into()),
                ..ListSessions::default()
            },
            soon(),
        )
        .await
        .unwrap_err();
    match err {
        AgentKitError::Provider {
            status, ref code, ..
        } => {
            assert_eq!(status, 400);
            assert!(code.contains("NextToken"), "{code}");
            assert!(!err.is_retryable());
        }
        other => panic!("{other:?}"),
    }
    let err = c
        .call(
            BEIJING,
            &GetSession {
                tool_id: tool,
                session_id: "s-nope".into(),
            },
            soon(),
        )
        .await
        .unwrap_err();
    assert!(err.is_not_found());
}

#[tokio::test]
async fn a_wrong_signature_is_refused_by_the_simulator() {
    let (sim, _) = start().await;
    let tool = seed_tool(&sim.control(), BEIJING, "t", false);
    let forger = AgentKitClient::new(
        &config(&sim.endpoint(), &[BEIJING]),
        Credentials::new("sim-access-key", "not-the-secret", None),
    )
    .unwrap();
    let err = forger
        .call(BEIJING, &GetTool { tool_id: tool }, soon())
        .await
        .unwrap_err();
    match &err {
        AgentKitError::Provider { status, code, .. } => {
            assert_eq!(*status, 401);
            assert_eq!(code, "SignatureDoesNotMatch");
        }
        other => panic!("{other:?}"),
    }
    assert!(!err.to_string().contains("not-the-secret"));
    let counters = sim.control().counters();
    assert_eq!(counters.signature_failures, 1, "refused once, not retried");
    assert_eq!(counters.received("GetTool"), 0);
}

#[tokio::test]
async fn throttling_is_retried_to_success() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    let tool = seed_tool(&ctl, BEIJING, "t", false);
    ctl.inject(Fault::error(Some("GetTool"), "Throttling", 429).next(2))
        .unwrap();
    let t = c
        .call(
            BEIJING,
            &GetTool {
                tool_id: tool.clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(t.tool_id.as_deref(), Some(tool.as_str()));
    let counters = ctl.counters();
    assert_eq!(counters.received("GetTool"), 3);
    assert_eq!(counters.succeeded("GetTool"), 1);

    // A 503 of a read is retried too.
    ctl.inject(Fault::error(Some("ListTools"), "ServiceUnavailable", 503).next(1))
        .unwrap();
    c.call(
        BEIJING,
        &ListTools {
            project_name: "default".into(),
            ..Default::default()
        },
        soon(),
    )
    .await
    .unwrap();
    assert_eq!(ctl.counters().received("ListTools"), 2);
}

#[tokio::test]
async fn throttling_past_the_deadline_is_reported_as_throttled() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    let tool = seed_tool(&ctl, BEIJING, "t", false);
    ctl.inject(Fault::error(Some("GetTool"), "Throttling", 429).retry_after(2))
        .unwrap();
    let started = std::time::Instant::now();
    let err = c
        .call(
            BEIJING,
            &GetTool { tool_id: tool },
            Deadline::after(Duration::from_millis(800)),
        )
        .await
        .unwrap_err();
    match err {
        AgentKitError::Throttled { retry_after, .. } => {
            assert_eq!(retry_after, Some(Duration::from_secs(2)))
        }
        other => panic!("{other:?}"),
    }
    // Retry-After (2 s) does not fit in the deadline: no wait, no second attempt.
    assert_eq!(ctl.counters().received("GetTool"), 1);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn non_idempotent_actions_are_not_resent_when_they_may_have_acted() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    let tool = seed_tool(&ctl, BEIJING, "t", true);
    // A 503 on CreateSession may hide a created session: not re-sent (the caller reconciles).
    ctl.inject(Fault::error(Some("CreateSession"), "ServiceUnavailable", 503).next(1))
        .unwrap();
    let err = c
        .call(
            BEIJING,
            &CreateSession::new(&tool, "studio-a-1", vec![]),
            soon(),
        )
        .await
        .unwrap_err();
    assert!(err.is_retryable());
    assert_eq!(ctl.counters().received("CreateSession"), 1);
    // A 429 means AgentKit refused before acting: re-sent.
    ctl.inject(Fault::error(Some("CreateSession"), "Throttling", 429).next(1))
        .unwrap();
    c.call(
        BEIJING,
        &CreateSession::new(&tool, "studio-a-2", vec![]),
        soon(),
    )
    .await
    .unwrap();
    assert_eq!(ctl.counters().received("CreateSession"), 3);
    // ErrCreateSessionFail is recognised for reconciliation.
    ctl.inject(
        Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500)
            .next(1)
            .after_apply(),
    )
    .unwrap();
    let err = c
        .call(
            BEIJING,
            &CreateSession::new(&tool, "studio-a-3", vec![]),
            soon(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentKitError::CreateSessionFailed { .. }),
        "{err:?}"
    );
    assert_eq!(
        ctl.counters().live_sessions_of("studio-a-3"),
        1,
        "it half-succeeded"
    );
}

#[tokio::test]
async fn region_fallback_moves_on_only_when_not_found() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    let tool = seed_tool(&ctl, SHANGHAI, "far", false);
    let found = c
        .call_any_region(
            &GetTool {
                tool_id: tool.clone(),
            },
            soon(),
        )
        .await
        .unwrap();
    assert_eq!(found.region, SHANGHAI);
    assert_eq!(found.value.tool_id.as_deref(), Some(tool.as_str()));
    assert_eq!(ctl.counters().received("GetTool"), 2);

    // A server error in the first region is not "elsewhere": no fallback.
    ctl.inject(Fault::error(Some("GetTool"), "InternalError", 500).next(1))
        .unwrap();
    let err = c
        .call_any_region(
            &GetTool {
                tool_id: tool.clone(),
            },
            soon(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentKitError::Provider { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(ctl.counters().received("GetTool"), 3);

    // Not found anywhere: NotFound.
    let err = c
        .call_any_region(
            &GetTool {
                tool_id: "t-missing".into(),
            },
            soon(),
        )
        .await
        .unwrap_err();
    assert!(err.is_not_found());
}

#[tokio::test]
async fn the_page_cap_stops_a_long_listing() {
    let (sim, c) = start().await;
    let ctl = sim.control();
    for i in 0..5 {
        seed_tool(&ctl, BEIJING, &format!("t{i}"), false);
    }
    let mut pager = Pager::new(
        &c,
        BEIJING,
        ListTools {
            project_name: "default".into(),
            max_results: Some(1),
            ..ListTools::default()
        },
        2,
    );
    assert!(pager.next_page(soon()).await.unwrap().is_some());
    assert!(pager.next_page(soon()).await.unwrap().is_some());
    let err = pager.next_page(soon()).await.unwrap_err();
    assert!(err.to_string().contains("more than 2 pages"), "{err}");
}

/// A server that answers every request with `size` bytes of a JSON-looking body, declared in
/// `Content-Length` or sent chunked.
async fn oversized_answers(size: usize, chunked: bool) -> String {
    use axum::body::Body;
    let app = axum::Router::new().fallback(move || async move {
        let body = if chunked {
            let chunk = vec![b' '; 64 * 1024];
            let chunks = size.div_ceil(chunk.len());
            Body::from_stream(futures::stream::iter(
                (0..chunks).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
            ))
        } else {
            Body::from(vec![b' '; size])
        };
        axum::response::Response::builder()
            .header("content-type", "application/json")
            .body(body)
            .expect("a response")
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// ListTools against a server answering `size` bytes (see [`oversized_answers`]).
async fn list_tools_answered_with(
    size: usize,
    chunked: bool,
) -> Result<ListToolsResult, AgentKitError> {
    let endpoint = oversized_answers(size, chunked).await;
    AgentKitClient::new(
        &config(&endpoint, &[BEIJING]),
        SimConfig::default().credentials,
    )
    .unwrap()
    .with_retry_policy(fast_retries())
    .call(BEIJING, &ListTools::default(), soon())
    .await
}

/// An answer over 4 MiB is refused, declared or chunked, with a clear error and without
/// reading it whole; one under the cap is read (and here is not an envelope).
#[tokio::test]
async fn answers_over_the_cap_are_refused_with_a_clear_error() {
    use snapwake::agentkit::MAX_ANSWER_BYTES;
    for chunked in [false, true] {
        let err = list_tools_answered_with(MAX_ANSWER_BYTES + 1, chunked)
            .await
            .expect_err("an oversized answer");
        assert!(
            matches!(&err, AgentKitError::InvalidResponse { detail, .. } if detail.contains("larger than 4 MiB")),
            "chunked: {chunked}: {err:?}"
        );

        let err = list_tools_answered_with(MAX_ANSWER_BYTES - 1, chunked)
            .await
            .expect_err("blank is no envelope");
        assert!(
            matches!(&err, AgentKitError::InvalidResponse { detail, .. } if !detail.contains("larger than")),
            "chunked: {chunked}: read under the cap: {err:?}"
        );
    }
}
