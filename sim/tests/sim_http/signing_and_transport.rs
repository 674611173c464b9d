//! Signatures and transport: bad signatures refused with 401 and counted, a configured session
//! token that must be sent and signed, a rotated key, and transport errors answered as 400
//! envelopes.

use super::*;

#[tokio::test]
async fn bad_signatures_are_refused_with_401_and_counted() {
    let (_s, ctl, ok) = sim().await;
    let t = ctl.seed_tool(BJ, tool("a", false)).unwrap();

    let mut wrong = Caller::new(&ok.endpoint);
    wrong.creds = Credentials::new("sim-access-key", "not-the-secret", None);
    let a = wrong.call("GetTool", json!({"ToolId": t})).await;
    assert_eq!((a.status, a.code()), (401, "SignatureDoesNotMatch"));
    assert_eq!(a.body["ResponseMetadata"]["Service"], "agentkit");

    let a = ok
        .raw("GetTool", br#"{"ToolId":"x"}"#.to_vec(), false)
        .await;
    assert_eq!((a.status, a.code()), (401, "MissingAuthenticationToken"));

    let mut late = Caller::new(&ok.endpoint);
    late.skew = time::Duration::minutes(-20);
    let a = late.call("GetTool", json!({"ToolId": t})).await;
    assert_eq!((a.status, a.code()), (401, "SignatureExpired"));

    // Moving the simulated clock does not affect signature freshness.
    ctl.advance(Duration::from_secs(86_400));
    let a = ok.call("GetTool", json!({"ToolId": t})).await;
    assert_eq!(a.status, 200, "{}", a.body);

    let c = ctl.counters();
    assert_eq!(c.signature_failures, 3);
    assert_eq!(c.received("GetTool"), 1);
    assert_eq!(c.succeeded("GetTool"), 1);
}

#[tokio::test]
async fn a_configured_session_token_must_be_sent_and_signed() {
    let creds = Credentials::new("ak", "sk", Some("sts-token".into()));
    let s = Simulator::start(SimConfig {
        credentials: creds.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    let mut with = Caller::new(&s.endpoint());
    with.creds = creds;
    let a = with
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let mut without = Caller::new(&s.endpoint());
    without.creds = Credentials::new("ak", "sk", None);
    let a = without
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!((a.status, a.code()), (401, "InvalidSecurityToken"));
    assert_eq!(s.control().counters().signature_failures, 1);
}

#[tokio::test]
async fn a_rotated_key_refuses_the_old_one() {
    let (_s, ctl, old) = sim().await;
    let a = old
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);

    let mut new = Caller::new(&old.endpoint);
    new.creds = Credentials::new("rotated-ak", "rotated-sk", None);
    ctl.set_credentials(new.creds.clone());
    let a = old
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!((a.status, a.code()), (401, "InvalidAccessKey"));
    let a = new
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);

    // A new secret under the same access key id: the old signature no longer matches.
    ctl.set_credentials(Credentials::new("rotated-ak", "rotated-sk-2", None));
    let a = new
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!((a.status, a.code()), (401, "SignatureDoesNotMatch"));
    assert_eq!(ctl.counters().signature_failures, 2);
}

#[tokio::test]
async fn transport_errors_are_400_envelopes() {
    let (_s, _ctl, c) = sim().await;
    let a = c.call("Frobnicate", json!({})).await;
    assert_eq!((a.status, a.code()), (400, "InvalidAction"));
    let a = c.raw("GetTool", b"{not json".to_vec(), true).await;
    assert_eq!((a.status, a.code()), (400, "InvalidParameter"));
    let a = c.call("GetTool", json!({})).await;
    assert_eq!((a.status, a.code()), (400, "InvalidParameter"));
    let a = c.call("GetTool", json!({"ToolId": ""})).await;
    assert_eq!((a.status, a.code()), (400, "InvalidParameter"));
    let a = c
        .call(
            "ListTools",
            json!({"ProjectName": "default", "MaxResults": 101}),
        )
        .await;
    assert_eq!((a.status, a.code()), (400, "InvalidParameter"));
    let mut v = Caller::new(&c.endpoint);
    v.version = "2020-01-01".into();
    let a = v.call("ListTools", json!({"ProjectName": "default"})).await;
    assert_eq!((a.status, a.code()), (400, "InvalidVersion"));
    let a = Caller::new(&c.endpoint)
        .region("us-east-1")
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!((a.status, a.code()), (400, "InvalidRegion"));
    assert_eq!(a.body["ResponseMetadata"]["Region"], "us-east-1");
}
