//! The AgentKit simulator driven over real HTTP with signed requests.

use std::time::Duration;

use serde_json::{json, Value};
use snapwake::agentkit::signer::{self, Credentials};
use snapwake::agentkit::types::MetadataEntry;
use snapwake_sim::{Fault, SeedSession, SeedSnapshot, SeedTool, SimConfig, SimControl, Simulator};
use time::OffsetDateTime;

const BJ: &str = "cn-beijing";
const SH: &str = "cn-shanghai";

struct Answer {
    status: u16,
    body: Value,
    retry_after: Option<String>,
}

impl Answer {
    fn code(&self) -> &str {
        self.body["ResponseMetadata"]["Error"]["Code"]
            .as_str()
            .unwrap_or("")
    }
    fn result(&self) -> &Value {
        assert_eq!(self.status, 200, "{}", self.body);
        &self.body["Result"]
    }
}

struct Caller {
    http: reqwest::Client,
    endpoint: String,
    creds: Credentials,
    region: String,
    version: String,
    skew: time::Duration,
}

impl Caller {
    fn new(endpoint: &str) -> Self {
        Caller {
            http: reqwest::Client::new(),
            endpoint: endpoint.to_string(),
            creds: SimConfig::default().credentials,
            region: BJ.into(),
            version: "2025-10-30".into(),
            skew: time::Duration::ZERO,
        }
    }

    fn region(mut self, r: &str) -> Self {
        self.region = r.into();
        self
    }

    async fn call(&self, action: &str, body: Value) -> Answer {
        self.raw(action, serde_json::to_vec(&body).unwrap(), true)
            .await
    }

    async fn raw(&self, action: &str, body: Vec<u8>, sign: bool) -> Answer {
        let host = self.endpoint.trim_start_matches("http://").to_string();
        let query = [("Action", action), ("Version", self.version.as_str())];
        let mut req = self
            .http
            .post(format!("{}/", self.endpoint))
            .query(&query)
            .header("content-type", "application/json");
        if sign {
            let s = signer::sign(
                &self.creds,
                &self.region,
                OffsetDateTime::now_utc() + self.skew,
                &signer::Request {
                    host: &host,
                    query: &query,
                    content_type: "application/json",
                    body: &body,
                },
            );
            req = req
                .header("x-date", s.x_date)
                .header("x-content-sha256", s.x_content_sha256)
                .header("authorization", s.authorization);
            if let Some(t) = s.x_security_token {
                req = req.header("x-security-token", t);
            }
        }
        let resp = req.body(body).send().await.unwrap();
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let body: Value = resp.json().await.unwrap();
        Answer {
            status,
            body,
            retry_after,
        }
    }
}

fn tool(name: &str, recoverable: bool) -> SeedTool {
    SeedTool {
        name: name.into(),
        tool_type: "CodeEnv".into(),
        enable_snapshot: recoverable,
        ..Default::default()
    }
}

fn create_tool_body(name: &str) -> Value {
    json!({"Name": name, "ToolType": "CodeEnv", "ProjectName": "default", "CpuMilli": 4000,
           "MemoryMb": 8192, "EnableSnapshot": true})
}

fn create_session_body(tool: &str, usid: &str, user: &str) -> Value {
    json!({"ToolId": tool, "Ttl": 28800, "TtlUnit": "second", "UserSessionId": usid,
           "Metadata": [{"Key": "Username", "Type": "String", "Value": user}]})
}

async fn sim() -> (snapwake_sim::RunningSim, SimControl, Caller) {
    let s = Simulator::start(SimConfig::default()).await.unwrap();
    let c = s.control();
    let caller = Caller::new(&s.endpoint());
    (s, c, caller)
}

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

#[tokio::test]
async fn tools_live_in_one_region() {
    let (_s, ctl, bj) = sim().await;
    let sh = Caller::new(&bj.endpoint).region(SH);
    let t = ctl.seed_tool(SH, tool("hermes", true)).unwrap();
    let a = bj.call("GetTool", json!({"ToolId": t})).await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));
    let a = bj
        .call("CreateSession", create_session_body(&t, "u-1", "alice"))
        .await;
    assert_eq!(a.status, 404);
    let a = sh.call("GetTool", json!({"ToolId": t})).await;
    assert_eq!(a.result()["Status"], "Ready");
    assert_eq!(a.body["ResponseMetadata"]["Region"], SH);
    let a = bj
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.result()["Tools"].as_array().unwrap().len(), 0);
    let a = sh
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.result()["Tools"][0]["ToolId"], t.as_str());
}

#[tokio::test]
async fn tool_actions_and_filters() {
    let (_s, ctl, c) = sim().await;
    // More than 3 writes happen here; the throttle has its own test.
    ctl.set_tool_write_limit(None);
    ctl.set_tool_ready_delay(Duration::from_secs(30));
    let a = c.call("CreateTool", create_tool_body("codex")).await;
    let id = a.result()["ToolId"].as_str().unwrap().to_string();
    let a = c.call("GetTool", json!({"ToolId": id})).await;
    assert_eq!(a.result()["Status"], "Creating");
    // Not Ready yet: no sessions.
    let a = c
        .call("CreateSession", create_session_body(&id, "u", "alice"))
        .await;
    assert_eq!((a.status, a.code()), (409, "InvalidResource.Status"));
    ctl.advance(Duration::from_secs(31));
    let a = c.call("GetTool", json!({"ToolId": id})).await;
    assert_eq!(a.result()["Status"], "Ready");
    assert_eq!(a.result()["EnableSnapshot"], true);

    c.call("CreateTool", create_tool_body("openclaw"))
        .await
        .result();
    let a = c
        .call(
            "ListTools",
            json!({"ProjectName": "default", "Filters": [{"Name": "Name", "Values": ["codex"]}]}),
        )
        .await;
    let tools = a.result()["Tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["ToolId"], id.as_str());
    let a = c.call("ListTools", json!({"ProjectName": "other"})).await;
    assert!(a.result()["Tools"].as_array().unwrap().is_empty());
    let a = c
        .call(
            "ListTools",
            json!({"ProjectName": "default", "Filters": [{"Name": "Bogus", "Values": ["x"]}]}),
        )
        .await;
    assert_eq!(a.status, 400);

    let a = c
        .call(
            "UpdateTool",
            json!({"ToolId": id, "EnableSnapshot": false, "Envs": [{"Key": "A", "Value": "1"}]}),
        )
        .await;
    a.result();
    let t = c.call("GetTool", json!({"ToolId": id})).await;
    assert_eq!(t.result()["EnableSnapshot"], false);
    assert_eq!(t.result()["Envs"], json!([{"Key": "A", "Value": "1"}]));
    let a = c
        .call(
            "UpdateTool",
            json!({"ToolId": "t-nope", "EnableSnapshot": true}),
        )
        .await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));
    let a = c.call("UpdateTool", json!({"ToolId": id})).await;
    assert_eq!(a.status, 400);
}

#[tokio::test]
async fn session_actions_and_filters() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", false)).unwrap();
    let a = c
        .call(
            "CreateSession",
            create_session_body(&t, "u-alice-1", "alice"),
        )
        .await;
    let r = a.result();
    let s1 = r["SessionId"].as_str().unwrap().to_string();
    assert_eq!(r["UserSessionId"], "u-alice-1");
    assert!(r["Endpoint"].as_str().unwrap().contains("?auth="));
    c.call(
        "CreateSession",
        create_session_body(&t, "u-alice-2", "alice"),
    )
    .await
    .result();
    c.call("CreateSession", create_session_body(&t, "u-bob-1", "bob"))
        .await
        .result();

    let a = c
        .call("GetSession", json!({"ToolId": t, "SessionId": s1}))
        .await;
    let s = a.result();
    assert_eq!(s["Status"], "Ready");
    assert_eq!(s["ToolType"], "CodeEnv");
    assert_eq!(s["Metadata"][0]["Value"], "alice");
    let created = OffsetDateTime::parse(
        s["CreatedAt"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let expires = OffsetDateTime::parse(
        s["ExpireAt"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!(expires - created, time::Duration::hours(8));

    let ids = |a: &Answer| -> Vec<String> {
        a.result()["SessionInfos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["UserSessionId"].as_str().unwrap().to_string())
            .collect()
    };
    let a = c
        .call(
            "ListSessions",
            json!({"ToolId": t, "Metadata": [{"Key": "Username", "Value": "alice"}]}),
        )
        .await;
    assert_eq!(ids(&a), ["u-alice-1", "u-alice-2"]);
    let a = c
        .call(
            "ListSessions",
            json!({"ToolId": t, "Filters": [{"Name": "UserSessionId", "Values": ["u-bob-1", "u-alice-2"]}]}),
        )
        .await;
    assert_eq!(ids(&a), ["u-alice-2", "u-bob-1"]);
    let a = c
        .call(
            "ListSessions",
            json!({"ToolId": t, "Metadata": [{"Key": "Username", "Value": "alice"}],
                   "Filters": [{"Name": "UserSessionId", "Values": ["u-bob-1"]}]}),
        )
        .await;
    assert!(ids(&a).is_empty());

    let a = c
        .call("DeleteSession", json!({"ToolId": t, "SessionId": s1}))
        .await;
    a.result();
    let a = c
        .call("GetSession", json!({"ToolId": t, "SessionId": s1}))
        .await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));
    let a = c
        .call("DeleteSession", json!({"ToolId": t, "SessionId": s1}))
        .await;
    assert_eq!(a.status, 404);
    assert!(ctl.snapshots().is_empty(), "delete leaves no snapshot");
}

#[tokio::test]
async fn expiry_on_a_recoverable_tool_makes_a_snapshot_and_resume_makes_new_sessions() {
    let (_s, ctl, c) = sim().await;
    ctl.set_session_ready_delay(Duration::from_secs(60));
    let t = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-1", "alice"))
        .await;
    let sid = a.result()["SessionId"].as_str().unwrap().to_string();
    let get = json!({"ToolId": t, "SessionId": sid});
    assert_eq!(
        c.call("GetSession", get.clone()).await.result()["Status"],
        "Creating"
    );
    ctl.advance(Duration::from_secs(61));
    assert_eq!(
        c.call("GetSession", get.clone()).await.result()["Status"],
        "Ready"
    );
    assert_eq!(ctl.counters().live_sessions_of("u-1"), 1);

    ctl.advance(Duration::from_secs(8 * 3600));
    assert_eq!(c.call("GetSession", get).await.status, 404);
    let a = c.call("ListSessions", json!({"ToolId": t})).await;
    assert!(a.result()["SessionInfos"].as_array().unwrap().is_empty());

    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-1"}),
        )
        .await;
    let snaps = a.result()["Snapshots"].as_array().unwrap().clone();
    assert_eq!(snaps.len(), 1);
    let snap = &snaps[0];
    assert_eq!(snap["Status"], "Ready");
    assert_eq!(snap["Reason"], "Expired");
    assert_eq!(snap["SessionId"], sid.as_str());
    assert_eq!(snap["ToolId"], t.as_str());
    assert_eq!(snap["SessionMetadata"][0]["Key"], "Username");
    assert_eq!(snap["SessionMetadata"][0]["Value"], "alice");
    let snap_id = snap["SnapshotId"].as_str().unwrap().to_string();
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "SessionId": sid}),
        )
        .await;
    assert_eq!(a.result()["Snapshots"].as_array().unwrap().len(), 1);
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-2"}),
        )
        .await;
    assert!(a.result()["Snapshots"].as_array().unwrap().is_empty());

    let resume =
        json!({"ToolId": t, "SnapshotId": snap_id, "Ttl": 28800, "CreateNewInstance": false});
    let r1 = c.call("ResumeSessionFromSnapshot", resume.clone()).await;
    let r2 = c.call("ResumeSessionFromSnapshot", resume).await;
    let (n1, n2) = (
        r1.result()["SessionId"].as_str().unwrap().to_string(),
        r2.result()["SessionId"].as_str().unwrap().to_string(),
    );
    assert_ne!(n1, n2);
    assert_ne!(n1, sid);
    let s = ctl.session(&n1).unwrap();
    assert_eq!(s.user_session_id.as_deref(), Some("u-1"));
    assert_eq!(s.metadata, vec![MetadataEntry::string("Username", "alice")]);
    let counters = ctl.counters();
    assert_eq!(counters.resumes_of(&snap_id), 2);
    assert_eq!(counters.live_sessions_of("u-1"), 2);
    assert!(ctl.snapshot(&snap_id).is_some(), "the snapshot remains");

    let del = json!({"ToolId": t, "SnapshotId": snap_id});
    let a = c.call("DeleteSessionSnapshot", del.clone()).await;
    assert_eq!(a.result()["SnapshotId"], snap_id.as_str());
    assert_eq!(c.call("DeleteSessionSnapshot", del).await.status, 404);
    let a = c
        .call(
            "ResumeSessionFromSnapshot",
            json!({"ToolId": t, "SnapshotId": snap_id, "Ttl": 28800, "CreateNewInstance": false}),
        )
        .await;
    assert_eq!(a.status, 404);
}

#[tokio::test]
async fn only_ready_snapshots_resume_and_expiry_on_a_temporary_tool_leaves_nothing() {
    let (_s, ctl, c) = sim().await;
    let temp = ctl.seed_tool(BJ, tool("tmp", false)).unwrap();
    c.call("CreateSession", create_session_body(&temp, "u-t", "alice"))
        .await
        .result();
    ctl.advance(Duration::from_secs(28_801));
    assert!(ctl.sessions().is_empty());
    assert!(ctl.snapshots().is_empty());
    assert_eq!(ctl.counters().live_sessions_of("u-t"), 0);

    let rec = ctl.seed_tool(BJ, tool("rec", true)).unwrap();
    let snap = ctl
        .seed_snapshot(SeedSnapshot {
            tool_id: rec.clone(),
            user_session_id: Some("u-x".into()),
            status: Some("Creating".into()),
            ..Default::default()
        })
        .unwrap();
    let a = c
        .call(
            "ResumeSessionFromSnapshot",
            json!({"ToolId": rec, "SnapshotId": snap, "Ttl": 28800, "CreateNewInstance": false}),
        )
        .await;
    assert_eq!((a.status, a.code()), (409, "InvalidResource.Status"));
    assert_eq!(ctl.counters().resumes_of(&snap), 0);
}

#[tokio::test]
async fn seeded_sessions_past_their_expiry_become_snapshots() {
    let (_s, ctl, _c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("rec", true)).unwrap();
    let long_ago = ctl.now() - time::Duration::hours(9);
    let sid = ctl
        .seed_session(SeedSession {
            tool_id: t,
            user_session_id: Some("u-9".into()),
            created_at: Some(long_ago),
            metadata: vec![MetadataEntry::string("Username", "zoe")],
            ..Default::default()
        })
        .unwrap();
    assert!(ctl.session(&sid).is_none());
    let snaps = ctl.snapshots();
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0].session_id.as_deref(), Some(sid.as_str()));
    assert_eq!(
        snaps[0].created_at.as_deref().unwrap(),
        snapwake_ts(long_ago + time::Duration::hours(8))
    );
}

fn snapwake_ts(t: OffsetDateTime) -> String {
    snapwake::timestamp::format(t)
}

#[tokio::test]
async fn pagination_is_stable_and_tokens_are_tamper_evident() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("rec", true)).unwrap();
    let base = ctl.now() - time::Duration::days(1);
    let seeds = (0..25)
        .map(|i| SeedSnapshot {
            tool_id: t.clone(),
            snapshot_id: Some(format!("snap-{i:02}")),
            user_session_id: Some(format!("u-{}", i % 2)),
            created_at: Some(base + time::Duration::minutes(i)),
            ..Default::default()
        })
        .collect();
    ctl.seed_snapshots(seeds).unwrap();

    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut body = json!({"ToolId": t, "MaxResults": 10});
        if let Some(tok) = &token {
            body["NextToken"] = json!(tok);
        }
        let a = c.call("ListSessionSnapshots", body).await;
        let r = a.result().clone();
        pages += 1;
        seen.extend(
            r["Snapshots"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["SnapshotId"].as_str().unwrap().to_string()),
        );
        token = r["NextToken"].as_str().map(str::to_string);
        if token.is_none() {
            break;
        }
        if pages == 1 {
            // An insert between pages, older than the cursor, does not shift the next page.
            ctl.seed_snapshot(SeedSnapshot {
                tool_id: t.clone(),
                snapshot_id: Some("snap-early".into()),
                created_at: Some(base - time::Duration::minutes(5)),
                ..Default::default()
            })
            .unwrap();
        }
    }
    assert_eq!(pages, 3);
    let expected: Vec<String> = (0..25).map(|i| format!("snap-{i:02}")).collect();
    assert_eq!(seen, expected);

    // Default page size is 10.
    let a = c.call("ListSessionSnapshots", json!({"ToolId": t})).await;
    let first = a.result().clone();
    assert_eq!(first["Snapshots"].as_array().unwrap().len(), 10);
    let tok = first["NextToken"].as_str().unwrap().to_string();

    // Forged and altered tokens.
    for bad in [
        "forged",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        &tok[1..],
    ] {
        let a = c
            .call(
                "ListSessionSnapshots",
                json!({"ToolId": t, "NextToken": bad}),
            )
            .await;
        assert_eq!(a.status, 400, "{bad}");
        assert_eq!(a.code(), "InvalidParameter.NextToken");
    }
    // Reused with other filters, another Tool, another action.
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-1", "NextToken": tok}),
        )
        .await;
    assert_eq!(a.status, 400);
    let t2 = ctl.seed_tool(BJ, tool("other", true)).unwrap();
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t2, "NextToken": tok}),
        )
        .await;
    assert_eq!(a.status, 400);
    let a = c
        .call("ListSessions", json!({"ToolId": t, "NextToken": tok}))
        .await;
    assert_eq!(a.status, 400);
    // The same filters with another page size are fine.
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "NextToken": tok, "MaxResults": 100}),
        )
        .await;
    // snap-early now opens the listing, so 16 remain after the first page of 10.
    assert_eq!(a.result()["Snapshots"].as_array().unwrap().len(), 16);

    // Filtered pagination through the UserSessionId index.
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-1", "MaxResults": 5}),
        )
        .await;
    let r = a.result().clone();
    assert_eq!(r["Snapshots"].as_array().unwrap().len(), 5);
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "u-1", "MaxResults": 100, "NextToken": r["NextToken"]}),
        )
        .await;
    let rest = a.result()["Snapshots"].as_array().unwrap().clone();
    assert_eq!(rest.len(), 7);
    assert!(rest.iter().all(|s| s["UserSessionId"] == "u-1"));
}

#[tokio::test]
async fn tool_writes_above_three_per_second_are_throttled() {
    let (_s, ctl, c) = sim().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let a = c
            .call("CreateTool", create_tool_body(&format!("t{i}")))
            .await;
        ids.push(a.result()["ToolId"].as_str().unwrap().to_string());
    }
    // The window is shared with UpdateTool.
    let a = c
        .call(
            "UpdateTool",
            json!({"ToolId": ids[0], "EnableSnapshot": false}),
        )
        .await;
    assert_eq!((a.status, a.code()), (429, "Throttling"));
    let secs: u64 = a.retry_after.as_deref().unwrap().parse().unwrap();
    assert!(secs >= 1);
    let counters = ctl.counters();
    assert_eq!(counters.throttled, 1);
    assert_eq!(counters.max_tool_writes_per_second, 3);
    assert_eq!(counters.received("UpdateTool"), 1);
    assert_eq!(counters.succeeded("UpdateTool"), 0);
    // Reads are not throttled.
    c.call("GetTool", json!({"ToolId": ids[0]})).await.result();

    ctl.set_tool_write_limit(None);
    ctl.reset_counters();
    for i in 0..5 {
        c.call("CreateTool", create_tool_body(&format!("u{i}")))
            .await
            .result();
    }
    let counters = ctl.counters();
    assert_eq!(counters.max_tool_writes_per_second, 5);
    assert_eq!(counters.throttled, 0);
}

#[tokio::test]
async fn faults_next_n_rate_latency_and_after_apply() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", false)).unwrap();
    let get = json!({"ToolId": t});

    ctl.inject(Fault::error(Some("GetTool"), "ServiceUnavailable", 503).next(2))
        .unwrap();
    for _ in 0..2 {
        let a = c.call("GetTool", get.clone()).await;
        assert_eq!((a.status, a.code()), (503, "ServiceUnavailable"));
    }
    c.call("GetTool", get.clone()).await.result();
    assert_eq!(ctl.counters().faults_fired, 2);

    ctl.inject(
        Fault::error(Some("ListTools"), "Throttling", 429)
            .rate(0.5)
            .retry_after(2),
    )
    .unwrap();
    let mut hits = 0;
    for _ in 0..40 {
        let a = c.call("ListTools", json!({"ProjectName": "default"})).await;
        if a.status == 429 {
            assert_eq!(a.retry_after.as_deref(), Some("2"));
            hits += 1;
        } else {
            assert_eq!(a.status, 200);
        }
    }
    assert!((5..=35).contains(&hits), "{hits}");
    let counters = ctl.counters();
    assert_eq!(counters.received("ListTools"), 40);
    assert_eq!(counters.succeeded("ListTools"), 40 - hits);
    ctl.clear_faults();
    assert!(ctl.faults().is_empty());

    ctl.inject(Fault::latency(Some("GetTool"), 150).next(1))
        .unwrap();
    let started = std::time::Instant::now();
    c.call("GetTool", get.clone()).await.result();
    assert!(started.elapsed() >= Duration::from_millis(150));

    // A half-succeeded CreateSession: the error is answered, the session exists.
    ctl.inject(
        Fault::error(Some("CreateSession"), "ErrCreateSessionFail", 500)
            .next(1)
            .after_apply(),
    )
    .unwrap();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-half", "alice"))
        .await;
    assert_eq!((a.status, a.code()), (500, "ErrCreateSessionFail"));
    let a = c
        .call(
            "ListSessions",
            json!({"ToolId": t, "Filters": [{"Name": "UserSessionId", "Values": ["u-half"]}]}),
        )
        .await;
    assert_eq!(a.result()["SessionInfos"].as_array().unwrap().len(), 1);

    // A plain fault does not apply the action.
    ctl.inject(Fault::error(Some("CreateSession"), "InternalError", 500).next(1))
        .unwrap();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-lost", "alice"))
        .await;
    assert_eq!(a.status, 500);
    assert_eq!(ctl.counters().live_sessions_of("u-lost"), 0);
}

#[tokio::test]
async fn rate_faults_are_repeatable_for_a_seed() {
    async fn pattern(seed: u64) -> Vec<u16> {
        let s = Simulator::start(SimConfig {
            seed,
            ..Default::default()
        })
        .await
        .unwrap();
        let ctl = s.control();
        ctl.inject(Fault::error(None, "ServiceUnavailable", 503).rate(0.3))
            .unwrap();
        let c = Caller::new(&s.endpoint());
        let mut out = Vec::new();
        for _ in 0..20 {
            out.push(
                c.call("ListTools", json!({"ProjectName": "default"}))
                    .await
                    .status,
            );
        }
        out
    }
    assert_eq!(pattern(42).await, pattern(42).await);
}

#[tokio::test]
async fn control_surface_over_http() {
    let (s, ctl, c) = sim().await;
    let http = reqwest::Client::new();
    let url = |p: &str| format!("{}{p}", s.endpoint());
    let post = |p: &str, body: Value| http.post(url(p)).json(&body).send();

    let r: Value = post("/_sim/clock/set", json!({"now": "2030-01-01T00:00:00Z"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(r["now"].as_str().unwrap().starts_with("2030-01-01T00:00"));
    let r: Value = post("/_sim/clock/advance", json!({"seconds": 3600}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(r["now"].as_str().unwrap().starts_with("2030-01-01T01:00"));

    let r: Value = post(
        "/_sim/tools",
        json!({"region": SH, "tool_id": "t-fixed", "name": "n", "tool_type": "HermesEnv", "enable_snapshot": true}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(r["tool_id"], "t-fixed");
    let r = post(
        "/_sim/tools",
        json!({"region": "mars", "name": "n", "tool_type": "X"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let r: Value = post(
        "/_sim/sessions",
        json!({"tool_id": "t-fixed", "session_id": "s-1", "user_session_id": "u-1",
               "metadata": [{"Key": "Username", "Value": "al"}]}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(r["session_id"], "s-1");
    let r: Value = post(
        "/_sim/snapshots",
        json!([{"tool_id": "t-fixed", "snapshot_id": "snap-a", "user_session_id": "u-2"},
               {"tool_id": "t-fixed", "snapshot_id": "snap-b"}]),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(r["snapshot_ids"], json!(["snap-a", "snap-b"]));
    let r = post("/_sim/snapshots", json!({"tool_id": "t-none"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r: Value = http
        .get(url("/_sim/snapshots/snap-a"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["UserSessionId"], "u-2");
    assert_eq!(r["Reason"], "Expired");

    let r: Value = post(
        "/_sim/settings",
        json!({"session_ready_delay_ms": 5000, "tool_write_limit": null}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        r,
        json!({"session_ready_delay_ms": 5000, "tool_ready_delay_ms": 0,
               "snapshot_ready_delay_ms": 0, "snapshot_outcome": "Ready",
               "expiry_snapshot_delay_ms": 3000, "expiry_snapshot_hidden_ms": 0,
               "expiry_snapshot_outcome": "Ready", "stuck_sessions": 0,
               "tool_write_limit": null})
    );
    assert_eq!(ctl.settings().2, None);
    let r: Value = post(
        "/_sim/settings",
        json!({"snapshot_ready_delay_ms": 1500, "snapshot_outcome": "Failed"}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        (&r["snapshot_ready_delay_ms"], &r["snapshot_outcome"]),
        (&json!(1500), &json!("Failed"))
    );
    assert_eq!(ctl.snapshot_outcome(), "Failed");
    assert_eq!(ctl.snapshot_ready_delay(), Duration::from_millis(1500));

    let r = post(
        "/_sim/faults",
        json!({"action": "GetSession", "error": {"code": "InvalidResource.NotFound", "status": 404},
               "trigger": {"next": 1}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let sh = Caller::new(&c.endpoint).region(SH);
    let a = sh
        .call(
            "GetSession",
            json!({"ToolId": "t-fixed", "SessionId": "s-1"}),
        )
        .await;
    assert_eq!(a.status, 404);
    let a = sh
        .call(
            "GetSession",
            json!({"ToolId": "t-fixed", "SessionId": "s-1"}),
        )
        .await;
    assert_eq!(a.result()["Status"], "Ready");
    let r = post("/_sim/faults", json!({"trigger": {"rate": 2.0}}))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = http.delete(url("/_sim/faults")).send().await.unwrap();
    assert_eq!(r.status(), 200);

    let r: Value = http
        .get(url("/_sim/counters"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["actions"]["GetSession"]["received"], 2);
    assert_eq!(r["actions"]["GetSession"]["succeeded"], 1);
    assert_eq!(r["live_sessions"]["u-1"], 1);
    let r = post("/_sim/counters/reset", json!({})).await.unwrap();
    assert!(r.status().is_success());
    assert!(ctl.counters().actions.is_empty());
}

#[tokio::test]
async fn a_large_world_seeds_in_bulk_and_lists_one_owner_by_index() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("rec", true)).unwrap();
    let seeds: Vec<SeedSnapshot> = (0..20_000)
        .map(|i| SeedSnapshot {
            tool_id: t.clone(),
            user_session_id: Some(format!("owner-{}", i % 1000)),
            session_metadata: vec![MetadataEntry::string(
                "Username",
                format!("owner-{}", i % 1000),
            )],
            ..Default::default()
        })
        .collect();
    let ids = ctl.seed_snapshots(seeds).unwrap();
    assert_eq!(ids.len(), 20_000);
    let a = c
        .call(
            "ListSessionSnapshots",
            json!({"ToolId": t, "UserSessionId": "owner-7", "MaxResults": 100}),
        )
        .await;
    let r = a.result();
    assert_eq!(r["Snapshots"].as_array().unwrap().len(), 20);
    assert!(r["NextToken"].is_null());
}

#[tokio::test]
async fn start_on_a_fixed_port_and_serve_until_a_signal() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let s = Simulator::start(SimConfig {
        port,
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(s.endpoint(), format!("http://127.0.0.1:{port}"));
    let endpoint = s.endpoint();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(s.serve_until(async {
        let _ = rx.await;
    }));
    let a = Caller::new(&endpoint)
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.status, 200);
    tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .unwrap()
        .unwrap();
    // The port is free again.
    let again = Simulator::start(SimConfig {
        port,
        ..Default::default()
    })
    .await
    .unwrap();
    again.shutdown().await;
}

/// A simulator served on threads of its own answers like any other, and dropping it stops its
/// runtime and frees its port.
#[tokio::test]
async fn a_simulator_served_apart_answers_and_stops_when_dropped() {
    let s = Simulator::start_apart(SimConfig::default()).unwrap();
    let addr = s.addr();
    let a = Caller::new(&s.endpoint())
        .call("ListTools", json!({"ProjectName": "default"}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    drop(s);
    // Its runtime stops on its own thread: the port frees within moments, not at exit.
    let freed = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match std::net::TcpListener::bind(addr) {
            Ok(_) => break,
            Err(_) if std::time::Instant::now() < freed => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("{addr} still taken after the simulator was dropped: {e}"),
        }
    }
}

#[tokio::test]
async fn snapshots_on_request_and_session_ttls() {
    let (_s, ctl, c) = sim().await;
    let rec = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    let tmp = ctl.seed_tool(BJ, tool("codex-tmp", false)).unwrap();
    ctl.set_snapshot_ready_delay(Duration::from_secs(30));
    let meta = vec![MetadataEntry::string("Username", "alice")];
    let sess = ctl
        .seed_session(SeedSession {
            tool_id: rec.clone(),
            user_session_id: Some("u-sleepy".into()),
            metadata: meta.clone(),
            ..SeedSession::default()
        })
        .unwrap();

    // A snapshot on request: Creating, then Ready; the session goes on.
    let a = c
        .call(
            "CreateSessionSnapshot",
            json!({"SessionId": sess, "ToolId": rec}),
        )
        .await;
    let snap = a.result()["SnapshotId"].as_str().unwrap().to_string();
    assert_eq!(a.result()["Status"], "Creating");
    let get = json!({"SnapshotId": snap, "ToolId": rec});
    let s = c.call("GetSessionSnapshot", get.clone()).await;
    let seen = &s.result()["Snapshot"];
    assert_eq!(seen["Status"], "Creating");
    assert_eq!(seen["UserSessionId"], "u-sleepy");
    assert_eq!(seen["SessionId"], sess.as_str());
    assert_eq!(seen["Reason"], "Manual");
    assert_eq!(seen["SessionMetadata"][0]["Value"], "alice");
    // Not wakeable until Ready.
    let resume = json!({"ToolId": rec, "SnapshotId": snap, "Ttl": 60, "CreateNewInstance": false});
    let r = c.call("ResumeSessionFromSnapshot", resume.clone()).await;
    assert_eq!((r.status, r.code()), (409, "InvalidResource.Status"));
    ctl.advance(Duration::from_secs(31));
    let s = c.call("GetSessionSnapshot", get).await;
    assert_eq!(s.result()["Snapshot"]["Status"], "Ready");
    assert!(ctl.session(&sess).is_some(), "the session went on");
    assert_eq!(
        c.call(
            "ListSessionSnapshots",
            json!({"ToolId": rec, "UserSessionId": "u-sleepy"})
        )
        .await
        .result()["Snapshots"][0]["Status"],
        "Ready"
    );

    // A Tool without snapshots, an ended session, an unknown one: refused as AgentKit does.
    let t = ctl
        .seed_session(SeedSession {
            tool_id: tmp.clone(),
            user_session_id: Some("u-tmp".into()),
            ..SeedSession::default()
        })
        .unwrap();
    let a = c
        .call(
            "CreateSessionSnapshot",
            json!({"SessionId": t, "ToolId": tmp}),
        )
        .await;
    assert_eq!((a.status, a.code()), (400, "OperationDenied"));
    let failed = ctl
        .seed_session(SeedSession {
            tool_id: rec.clone(),
            status: Some("Failed".into()),
            ..SeedSession::default()
        })
        .unwrap();
    let a = c
        .call(
            "CreateSessionSnapshot",
            json!({"SessionId": failed, "ToolId": rec}),
        )
        .await;
    assert_eq!((a.status, a.code()), (409, "InvalidResource.Status"));
    let a = c
        .call(
            "CreateSessionSnapshot",
            json!({"SessionId": "sess-none", "ToolId": rec}),
        )
        .await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));

    // A TTL from now: the session outlives its old ExpireAt, and ends at the new one.
    let before = ctl.session(&sess).unwrap().expire_at.unwrap();
    let a = c
        .call(
            "SetSessionTtl",
            json!({"SessionId": sess, "ToolId": rec, "Ttl": 36000, "TtlUnit": "second"}),
        )
        .await;
    let moved = a.result()["ExpireAt"].as_str().unwrap().to_string();
    assert!(
        snapwake::timestamp::sort_key(Some(&moved)) > snapwake::timestamp::sort_key(Some(&before))
    );
    assert_eq!(
        ctl.session(&sess).unwrap().expire_at.as_deref(),
        Some(moved.as_str())
    );
    ctl.advance(Duration::from_secs(8 * 3600 + 60));
    assert!(ctl.session(&sess).is_some(), "alive past its old expiry");
    ctl.advance(Duration::from_secs(2 * 3600));
    assert!(ctl.session(&sess).is_none(), "ended at its new one");
    let a = c
        .call(
            "SetSessionTtl",
            json!({"SessionId": sess, "ToolId": rec, "Ttl": 60, "TtlUnit": "second"}),
        )
        .await;
    assert_eq!((a.status, a.code()), (404, "InvalidResource.NotFound"));
    let counters = ctl.counters();
    assert_eq!(counters.received("CreateSessionSnapshot"), 4);
    assert_eq!(counters.received("SetSessionTtl"), 2);
}

#[tokio::test]
async fn every_action_refuses_unknown_fields() {
    let (_s, ctl, c) = sim().await;
    let rec = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    for (action, body) in [
        ("ListSessions", json!({"ToolId": rec, "Bogus": 1})),
        (
            "GetSession",
            json!({"ToolId": rec, "SessionId": "s", "Bogus": 1}),
        ),
        ("ListSessionSnapshots", json!({"ToolId": rec, "Bogus": 1})),
        (
            "CreateSessionSnapshot",
            json!({"ToolId": rec, "SessionId": "s", "Bogus": 1}),
        ),
        (
            "GetSessionSnapshot",
            json!({"ToolId": rec, "SnapshotId": "s", "Bogus": 1}),
        ),
        (
            "SetSessionTtl",
            json!({"ToolId": rec, "SessionId": "s", "Ttl": 60, "TtlUnit": "second", "Bogus": 1}),
        ),
        ("GetTool", json!({"ToolId": rec, "Bogus": 1})),
    ] {
        let a = c.call(action, body).await;
        assert_eq!((a.status, a.code()), (400, "InvalidParameter"), "{action}");
    }
}

/// AgentKit's own time: the snapshot of an expired session is `Creating` for a while after the
/// session's ExpireAt (3 s by default), may be missing from listings for a moment, and may end
/// `Failed`; a clock jumped far past the expiry finds it finished.
#[tokio::test]
async fn expiry_snapshots_take_time_can_hide_and_can_fail() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    let list = |usid: &str| json!({"ToolId": t, "UserSessionId": usid});
    let seed = |usid: &str| {
        ctl.seed_session(SeedSession {
            tool_id: t.clone(),
            user_session_id: Some(usid.into()),
            ttl_secs: Some(60),
            ..SeedSession::default()
        })
        .unwrap()
    };

    // Default: Creating right after the expiry, Ready 3 s after it.
    seed("u-1");
    ctl.advance(Duration::from_secs(60));
    let a = c.call("ListSessionSnapshots", list("u-1")).await;
    let snap = a.result()["Snapshots"][0].clone();
    assert_eq!(snap["Status"], "Creating", "{snap}");
    let id = snap["SnapshotId"].as_str().unwrap().to_string();
    let resume = json!({"ToolId": t, "SnapshotId": id, "Ttl": 28800, "CreateNewInstance": false});
    assert_eq!(
        c.call("ResumeSessionFromSnapshot", resume).await.status,
        409
    );
    ctl.advance(Duration::from_secs(4));
    let a = c
        .call("GetSessionSnapshot", json!({"ToolId": t, "SnapshotId": id}))
        .await;
    assert_eq!(a.result()["Snapshot"]["Status"], "Ready");

    // Hidden for 10 s, then Failed after 20 s.
    ctl.set_expiry_snapshot_hidden(Duration::from_secs(10));
    ctl.set_expiry_snapshot_delay(Duration::from_secs(20));
    ctl.set_expiry_snapshot_outcome("Failed");
    seed("u-2");
    ctl.advance(Duration::from_secs(61));
    let a = c.call("ListSessionSnapshots", list("u-2")).await;
    assert!(
        a.result()["Snapshots"].as_array().unwrap().is_empty(),
        "hidden"
    );
    ctl.advance(Duration::from_secs(10));
    let a = c.call("ListSessionSnapshots", list("u-2")).await;
    assert_eq!(a.result()["Snapshots"][0]["Status"], "Creating");
    ctl.advance(Duration::from_secs(20));
    let a = c.call("ListSessionSnapshots", list("u-2")).await;
    assert_eq!(a.result()["Snapshots"][0]["Status"], "Failed");

    // The same settings over the control surface.
    let http = reqwest::Client::new();
    let url = format!("{}/_sim/settings", _s.endpoint());
    let v: Value = http
        .post(&url)
        .json(
            &json!({"expiry_snapshot_delay_ms": 1500, "expiry_snapshot_hidden_ms": 0,
                      "expiry_snapshot_outcome": "Ready", "stuck_sessions": 2}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["expiry_snapshot_delay_ms"], 1500);
    assert_eq!(v["expiry_snapshot_hidden_ms"], 0);
    assert_eq!(v["expiry_snapshot_outcome"], "Ready");
    assert_eq!(v["stuck_sessions"], 2);
}

/// Sessions that never get ready, and sessions in a status nobody documented.
#[tokio::test]
async fn sessions_can_stay_starting_or_take_any_status() {
    let (s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    ctl.set_stuck_sessions(1);
    let a = c
        .call("CreateSession", create_session_body(&t, "u-1", "alice"))
        .await;
    let stuck = a.result()["SessionId"].as_str().unwrap().to_string();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-2", "bob"))
        .await;
    let fine = a.result()["SessionId"].as_str().unwrap().to_string();
    ctl.advance(Duration::from_secs(3600));
    let get = |id: &str| json!({"ToolId": t, "SessionId": id});
    assert_eq!(
        c.call("GetSession", get(&stuck)).await.result()["Status"],
        "Starting"
    );
    assert_eq!(
        c.call("GetSession", get(&fine)).await.result()["Status"],
        "Ready"
    );

    ctl.set_session_status(&fine, Some("Paused")).unwrap();
    assert_eq!(
        c.call("GetSession", get(&fine)).await.result()["Status"],
        "Paused"
    );
    ctl.set_session_status(&fine, None).unwrap();
    assert_eq!(
        c.call("GetSession", get(&fine)).await.result()["Status"],
        "Ready"
    );
    assert!(ctl.set_session_status("sess-nobody", Some("x")).is_err());

    // Over HTTP.
    let http = reqwest::Client::new();
    let url = format!("{}/_sim/sessions/{stuck}/status", s.endpoint());
    let r = http
        .post(&url)
        .json(&json!({"status": "Hibernating"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        c.call("GetSession", get(&stuck)).await.result()["Status"],
        "Hibernating"
    );
    let url = format!("{}/_sim/sessions/sess-nobody/status", s.endpoint());
    let r = http
        .post(&url)
        .json(&json!({"status": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

/// An action answered with an error and carried out later, as AgentKit does with a request
/// whose answer was lost: nothing now, the effect once its time has come.
#[tokio::test]
async fn actions_can_fail_now_and_apply_late() {
    let (_s, ctl, c) = sim().await;
    let t = ctl.seed_tool(BJ, tool("codex", true)).unwrap();
    ctl.inject(
        Fault::error(Some("CreateSession"), "InternalError", 500)
            .next(1)
            .apply_after(Duration::from_secs(5)),
    )
    .unwrap();
    let a = c
        .call("CreateSession", create_session_body(&t, "u-1", "alice"))
        .await;
    assert_eq!(a.status, 500);
    let list = json!({"ToolId": t, "Filters": [{"Name": "UserSessionId", "Values": ["u-1"]}]});
    let a = c.call("ListSessions", list.clone()).await;
    assert!(
        a.result()["SessionInfos"].as_array().unwrap().is_empty(),
        "not yet"
    );
    assert_eq!(ctl.late_pending(), 1);
    ctl.advance(Duration::from_secs(5));
    let a = c.call("ListSessions", list).await;
    let late = a.result()["SessionInfos"].as_array().unwrap().clone();
    assert_eq!(late.len(), 1, "applied late");
    assert_eq!(ctl.counters().late_applied.get("CreateSession"), Some(&1));
    assert_eq!(ctl.late_pending(), 0);

    // DeleteSession, late too; a Resume of a snapshot deleted meanwhile applies nothing.
    let sid = late[0]["SessionId"].as_str().unwrap().to_string();
    ctl.inject(
        Fault::error(Some("DeleteSession"), "ServiceUnavailable", 503)
            .next(1)
            .apply_after(Duration::from_secs(2)),
    )
    .unwrap();
    let del = json!({"ToolId": t, "SessionId": sid});
    assert_eq!(c.call("DeleteSession", del).await.status, 503);
    assert_eq!(ctl.counters().live_sessions_of("u-1"), 1);
    ctl.advance(Duration::from_secs(2));
    assert_eq!(ctl.counters().live_sessions_of("u-1"), 0);

    let snap = ctl
        .seed_snapshot(SeedSnapshot {
            tool_id: t.clone(),
            user_session_id: Some("u-2".into()),
            ..SeedSnapshot::default()
        })
        .unwrap();
    ctl.inject(
        Fault::error(Some("ResumeSessionFromSnapshot"), "InternalError", 500)
            .next(1)
            .apply_after(Duration::from_secs(2)),
    )
    .unwrap();
    let resume = json!({"ToolId": t, "SnapshotId": snap, "Ttl": 28800, "CreateNewInstance": false});
    assert_eq!(
        c.call("ResumeSessionFromSnapshot", resume).await.status,
        500
    );
    let gone = json!({"ToolId": t, "SnapshotId": snap});
    c.call("DeleteSessionSnapshot", gone).await;
    ctl.advance(Duration::from_secs(2));
    assert_eq!(ctl.counters().live_sessions_of("u-2"), 0);
    assert_eq!(
        ctl.counters().late_applied.get("ResumeSessionFromSnapshot"),
        None
    );

    // An apply_after without an error is refused.
    let mut bad = Fault::latency(Some("CreateSession"), 1);
    bad.apply_after_ms = Some(10);
    assert!(ctl.inject(bad).is_err());
}
