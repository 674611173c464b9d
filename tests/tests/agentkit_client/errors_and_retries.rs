//! Errors and retries: a forged next token and an unknown session are errors, a wrong signature
//! is refused, throttling is retried to success within the deadline (and reported past it), and
//! actions that may have acted are not sent again.

use super::*;
use snapwake::agentkit::Reread;

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
        AgentKitError::Unauthorized {
            status,
            code,
            reread,
            ..
        } => {
            assert_eq!(*status, 401);
            assert_eq!(code, "SignatureDoesNotMatch");
            // Keys from the environment cannot be re-read: refused once, surfaced as it is.
            assert_eq!(*reread, Reread::Static);
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
