//! The AgentKit simulator driven over real HTTP with signed requests.

use std::time::Duration;

use serde_json::{json, Value};
use snapwake::agentkit::signer;
use snapwake::agentkit::types::MetadataEntry;
use snapwake::agentkit::Credentials;
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

mod signing_and_transport;
mod actions;
mod expiry;
mod pagination;
mod faults_and_throttling;
mod control_and_serving;
mod sessions_and_snapshots;
