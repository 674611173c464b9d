//! The studio's people as clients of the API: each request goes through API Gateway's routing
//! to its function, as one invocation (which the deployment's faults may stop: API Gateway
//! then answers 502), and each person asks again as the clients do: a 202 after its
//! `Retry-After`, a retryable problem after its `Retry-After` (1 s without one), an invocation
//! that died after a second. What each asks is noted in the model before it is asked.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use snapwake::domain::{AgentKey, Kind};

use super::invocation::{Invocation, Stop};
use super::model::{Model, ScheduleDef};
use super::world::Deployment;
use crate::{answer, header_of, request, request_query, with_header, Who};

/// How long a person follows one action (202s, retries) before giving up on it for now.
const PATIENCE: Duration = Duration::from_secs(600);

/// What a person's request came to: the last answer.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

/// Where the studio's people act: the deployment, the model they note their intents in, and
/// how their invocations fare.
pub struct People {
    pub deployment: Arc<Deployment>,
    pub model: Arc<Mutex<Model>>,
    /// Chooses which invocations are stopped, and where.
    pub fates: Arc<Mutex<Fates>>,
    pub trace: Arc<Mutex<super::trace::Trace>>,
}

/// The fate of each invocation: most run through; a share is stopped at one of its calls.
pub struct Fates {
    pub rng: fastrand::Rng,
    /// The share of invocations stopped.
    pub stop_rate: f64,
    pub stopped: u64,
}

impl Fates {
    /// The fate of the next invocation.
    pub fn next(&mut self) -> Option<Stop> {
        if self.stop_rate <= 0.0 || self.rng.f64() >= self.stop_rate {
            return None;
        }
        self.stopped += 1;
        Some(Stop {
            at_call: self.rng.u32(1..=12),
            after_landing: self.rng.bool(),
        })
    }
}

impl People {
    fn now(&self) -> u64 {
        snapwake::ambient::now_ms()
    }

    fn note(&self, line: String) {
        self.trace
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .note(line);
    }

    fn model(&self) -> std::sync::MutexGuard<'_, Model> {
        self.model.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One request as one invocation of its function.
    pub async fn once(&self, request: lambda_http::Request) -> (u16, Value, Option<u64>) {
        let fate = self.fates.lock().unwrap_or_else(|p| p.into_inner()).next();
        let invocation = Invocation::new("http", fate);
        match invocation.run(self.deployment.api.handle(request)).await {
            Some(resp) => {
                let (status, body) = answer(&resp);
                let after = header_of(&resp, "retry-after").and_then(|s| s.parse().ok());
                (status, body, after)
            }
            // The function died: API Gateway answers 502 on its own.
            None => (
                502,
                serde_json::json!({"message": "Internal Server Error"}),
                None,
            ),
        }
    }

    /// `method path` as `who`, asked again as a client does until it is final or the person's
    /// patience ends.
    pub async fn ask(
        &self,
        who: Who<'_>,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&'static str, &str)],
    ) -> Answer {
        let until = self.now() + PATIENCE.as_millis() as u64;
        loop {
            let mut req = request(method, path, who, body);
            for (name, value) in headers {
                req = with_header(req, name, value);
            }
            let (status, body, after) = self.once(req).await;
            let again = status == 202 || status == 502 || body["retryable"] == true;
            if !again || self.now() >= until {
                return Answer { status, body };
            }
            let pause = after.unwrap_or(1).clamp(1, 30);
            tokio::time::sleep(Duration::from_secs(pause)).await;
        }
    }

    /// `owner` wakes `key` from `tabs` tabs at once.
    pub async fn wake(&self, owner: &str, key: &AgentKey, tabs: usize) {
        let start = self.now();
        if let Some(a) = self.model().agent(key) {
            a.person_wakes.push(start);
        }
        let path = format!("/v1/agents/{}/{}/resume", key.kind, key.agent_id);
        let asks = (0..tabs.max(1)).map(|_| self.ask(Who::User(owner), "POST", &path, None, &[]));
        let answers = futures::future::join_all(asks).await;
        let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
        self.note(format!(
            "{owner} woke {key} from {tabs} tab(s): {statuses:?}"
        ));
    }

    /// `owner` puts `key` to sleep now.
    pub async fn sleep(&self, owner: &str, key: &AgentKey) {
        if let Some(a) = self.model().agent(key) {
            a.person_sleeps.push(self.now());
        }
        let path = format!("/v1/agents/{}/{}/sleep", key.kind, key.agent_id);
        let a = self.ask(Who::User(owner), "POST", &path, None, &[]).await;
        self.note(format!("{owner} put {key} to sleep: {}", a.status));
    }

    /// `owner` keeps `key` awake another hour.
    pub async fn keepalive(&self, owner: &str, key: &AgentKey) {
        if let Some(a) = self.model().agent(key) {
            a.person_keepalives.push(self.now());
        }
        let path = format!("/v1/agents/{}/{}/keepalive", key.kind, key.agent_id);
        let a = self
            .ask(
                Who::User(owner),
                "POST",
                &path,
                Some(r#"{"ttl_s": 3600}"#),
                &[("content-type", "application/json")],
            )
            .await;
        self.note(format!("{owner} kept {key} awake: {}", a.status));
    }

    /// `owner` creates an agent of `kind`; answers its key once it exists.
    pub async fn create(
        &self,
        owner: &str,
        kind: Kind,
        recoverable: bool,
        n: u64,
    ) -> Option<AgentKey> {
        let retention = if recoverable {
            "recoverable"
        } else {
            "temporary"
        };
        let body = format!(
            r#"{{"kind": "{kind}", "display_name": "Helper {n}", "retention": "{retention}"}}"#
        );
        let idempotency = format!("{owner}-create-{n}");
        let headers = [
            ("content-type", "application/json"),
            ("idempotency-key", idempotency.as_str()),
        ];
        let a = self
            .ask(
                Who::User(owner),
                "POST",
                "/v1/agents",
                Some(&body),
                &headers,
            )
            .await;
        self.note(format!(
            "{owner} created a {retention} {kind} agent: {}",
            a.status
        ));
        let id = a.body["agent_id"].as_str().filter(|_| a.status == 201)?;
        let key = AgentKey::new(kind, id);
        let now = self.now();
        self.model()
            .add_agent(kind, id, owner, recoverable, false, now);
        Some(key)
    }

    /// `owner` deletes `key` as a whole.
    pub async fn delete(&self, owner: &str, key: &AgentKey) {
        let asked = self.now();
        if let Some(a) = self.model().agent(key) {
            a.delete_asked_ms.get_or_insert(asked);
        }
        let path = format!("/v1/agents/{}/{}", key.kind, key.agent_id);
        let a = self.ask(Who::User(owner), "DELETE", &path, None, &[]).await;
        self.note(format!("{owner} deleted {key}: {}", a.status));
        if a.status == 204 {
            let now = self.now();
            if let Some(f) = self.model().agent(key) {
                f.deleted_ms.get_or_insert(now);
            }
        }
    }

    /// `owner` deletes the oldest snapshot of `key`, if it has two or more.
    pub async fn delete_snapshot(&self, owner: &str, key: &AgentKey) {
        let mine: Vec<_> = self
            .deployment
            .sim
            .snapshots()
            .into_iter()
            .filter(|s| {
                s.user_session_id.as_deref() == Some(key.agent_id.as_str()) && s.is_wakeable()
            })
            .collect();
        let [oldest, _, ..] = mine.as_slice() else {
            return;
        };
        let id = oldest.snapshot_id.clone().unwrap_or_default();
        let path = format!("/v1/agents/{}/{}/snapshots/{id}", key.kind, key.agent_id);
        let a = self.ask(Who::User(owner), "DELETE", &path, None, &[]).await;
        self.note(format!(
            "{owner} deleted snapshot {id} of {key}: {}",
            a.status
        ));
    }

    /// `owner` sets (or, with `None`, removes) `key`'s schedule; the model learns it when the
    /// API says so.
    pub async fn schedule(&self, owner: &str, key: &AgentKey, def: Option<ScheduleDef>) {
        let path = format!("/v1/agents/{}/{}/schedule", key.kind, key.agent_id);
        // A change asked is a change: until answered, either may be in force.
        let asked = self.now();
        if let Some(a) = self.model().agent(key) {
            a.schedules.push((asked, def.clone()));
        }
        let a = match &def {
            Some(d) => {
                let body =
                    serde_json::json!({"timezone": d.timezone, "wake": d.wake, "sleep": d.sleep})
                        .to_string();
                self.ask(
                    Who::User(owner),
                    "PUT",
                    &path,
                    Some(&body),
                    &[("content-type", "application/json")],
                )
                .await
            }
            None => self.ask(Who::User(owner), "DELETE", &path, None, &[]).await,
        };
        self.note(format!(
            "{owner} set {key}'s schedule to {def:?}: {}",
            a.status
        ));
        let answered = self.now();
        let ok = matches!(a.status, 200 | 204);
        if let Some(f) = self.model().agent(key) {
            // Answered: in force from now (as asked, or as it was before, if refused).
            let kept = if ok {
                def
            } else {
                f.schedules.iter().rev().nth(1).and_then(|(_, d)| d.clone())
            };
            f.schedules.push((answered, kept));
        }
    }

    /// The list `who` sees with `query` (every page of it), answered without faults: what the
    /// model checks views by.
    pub async fn list(&self, who: Who<'_>, query: &[(&str, &str)]) -> Option<Vec<Value>> {
        let mut agents = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let mut pairs: Vec<(&str, &str)> = query.to_vec();
            if let Some(c) = &cursor {
                pairs.push(("cursor", c.as_str()));
            }
            let req = request_query("GET", "/v1/agents", &pairs, who);
            let (status, body) = answer(&self.deployment.api.handle(req).await);
            if status != 200 {
                self.note(format!("a view check's list answered {status}: {body}"));
                return None;
            }
            // A list AgentKit could not answer whole is partial: the model cannot tell what
            // it lost from what AgentKit failed to say.
            if body["partial"].as_array().is_some_and(|p| !p.is_empty()) {
                return None;
            }
            agents.extend(body["agents"].as_array().cloned().unwrap_or_default());
            match body["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => return Some(agents),
            }
        }
        Some(agents)
    }
}
