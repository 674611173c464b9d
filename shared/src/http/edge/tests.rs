use super::*;
use crate::agentkit::AgentKitError;
use std::time::Duration;

fn body_json(resp: &http::Response<Body>) -> serde_json::Value {
    match resp.body() {
        Body::Text(t) => serde_json::from_str(t).unwrap(),
        other => panic!("unexpected body {other:?}"),
    }
}

#[test]
fn every_variant_maps_to_its_documented_code_and_status() {
    let cases: Vec<(Error, u16, &str, bool)> = vec![
        (Error::Unauthenticated, 401, "UNAUTHENTICATED", false),
        (Error::AgentNotFound, 404, "AGENT_NOT_FOUND", false),
        (Error::AgentGone, 410, "AGENT_GONE", false),
        (Error::SnapshotNotFound, 404, "SNAPSHOT_NOT_FOUND", false),
        (
            Error::AgentBusy {
                detail: "a wake holds the agent".into(),
                retry_after_s: 3,
            },
            409,
            "AGENT_BUSY",
            true,
        ),
        (
            Error::PreconditionFailed { given: "4".into() },
            412,
            "PRECONDITION_FAILED",
            false,
        ),
        (Error::bad_request("bad"), 400, "INVALID_REQUEST", false),
        (Error::unprocessable("bad"), 422, "INVALID_REQUEST", false),
        (
            Error::NotWakeable("no snapshot".into()),
            422,
            "NOT_WAKEABLE",
            false,
        ),
        (
            Error::NotSleepable("temporary".into()),
            422,
            "NOT_SLEEPABLE",
            false,
        ),
        (
            Error::NotAwake("no session".into()),
            422,
            "NOT_AWAKE",
            false,
        ),
        (
            Error::SleepFailed("snapshot Failed".into()),
            502,
            "PROVIDER_ERROR",
            true,
        ),
        (
            Error::PayloadTooLarge { limit: 16384 },
            413,
            "PAYLOAD_TOO_LARGE",
            false,
        ),
        (
            Error::NotConfigured("x".into()),
            503,
            "NOT_CONFIGURED",
            false,
        ),
        (
            Error::AgentKit(AgentKitError::Throttled {
                action: "ListSessions",
                retry_after: Some(Duration::from_secs(2)),
            }),
            429,
            "PROVIDER_THROTTLED",
            true,
        ),
        (
            Error::AgentKit(AgentKitError::Provider {
                action: "GetSession",
                code: "InternalError".into(),
                status: 500,
                message: "secret-ish provider text".into(),
            }),
            502,
            "PROVIDER_ERROR",
            true,
        ),
        (
            Error::AgentKit(AgentKitError::Provider {
                action: "GetSession",
                code: "InvalidParameter".into(),
                status: 400,
                message: "m".into(),
            }),
            502,
            "PROVIDER_ERROR",
            false,
        ),
        (
            Error::Internal("db exploded at 0xdead".into()),
            500,
            "INTERNAL",
            false,
        ),
    ];
    for (err, status, code, retryable) in cases {
        let resp = err.into_response(Some("req-1"));
        assert_eq!(resp.status().as_u16(), status, "{err:?}");
        assert_eq!(
            resp.headers()[http::header::CONTENT_TYPE],
            "application/problem+json"
        );
        let v = body_json(&resp);
        assert_eq!(v["code"], code);
        assert_eq!(v["status"], status);
        assert_eq!(v["retryable"], retryable, "{err:?}");
        assert_eq!(v["request_id"], "req-1");
        let kebab = code.to_ascii_lowercase().replace('_', "-");
        assert_eq!(v["type"], format!("urn:snapwake:problem:{kebab}"));
        assert!(v["title"].as_str().is_some_and(|t| !t.is_empty()));
        let detail = v["detail"].as_str().unwrap();
        assert!(!detail.contains("0xdead") && !detail.contains("secret-ish"));
    }
}

#[test]
fn busy_and_throttled_carry_retry_after_and_405_carries_allow() {
    let busy = Error::AgentBusy {
        detail: "busy".into(),
        retry_after_s: 5,
    }
    .into_response(None);
    assert_eq!(busy.headers()[http::header::RETRY_AFTER], "5");
    let throttled = Error::AgentKit(AgentKitError::Throttled {
        action: "CreateTool",
        retry_after: None,
    })
    .into_response(None);
    assert_eq!(throttled.headers()[http::header::RETRY_AFTER], "1");
    let not_allowed = Error::MethodNotAllowed {
        allow: "GET, POST".into(),
    }
    .into_response(None);
    assert_eq!(not_allowed.status().as_u16(), 405);
    assert_eq!(not_allowed.headers()[http::header::ALLOW], "GET, POST");
    assert!(body_json(&not_allowed)["request_id"].is_null());
}
