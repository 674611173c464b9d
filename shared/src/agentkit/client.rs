//! The AgentKit HTTP client: signs, reads the envelope, classifies errors, retries within the
//! caller's deadline, falls back across regions. One per container, shared by its clones.

use super::answer::Reread;
use super::answer::RetryPolicy;
use super::answer::MAX_ANSWER_BYTES;
use super::answer::{self, read_envelope};
use super::credentials::REREAD_INTERVAL;
use super::credentials::{AfterRefusal, CredentialsCell};
use super::port::{AgentKit, CallBudget, Https, NoAnswer, NoSlot, Outgoing, Transport};
use super::signer;
use super::types::{Action, API_VERSION};
use super::AgentKitError;
use super::Credentials;
use crate::agentkit::AgentKitConfig;
use crate::invocation::Deadline;
use crate::invocation::{self, Metric};
use reqwest::Url;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;

const JSON: &str = "application/json";

/// A result with the region that answered it: resume and delete must go back to that region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regional<T> {
    pub region: String,
    pub value: T,
}

#[derive(Clone)]
pub struct AgentKitClient {
    transport: Arc<dyn Transport>,
    endpoint: Url,
    host: String,
    regions: Vec<String>,
    credentials: Arc<CredentialsCell>,
    reread_interval: Duration,
    retry: RetryPolicy,
    request_timeout: Duration,
    /// Asked before every attempt (`crate::budget`); `None`: calls go out at once.
    budget: Option<Arc<dyn CallBudget>>,
}

impl std::fmt::Debug for AgentKitClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentKitClient")
            .field("endpoint", &self.endpoint.as_str())
            .field("regions", &self.regions)
            .field("credentials", &self.credentials.current().credentials)
            .finish()
    }
}

struct Failure {
    error: AgentKitError,
    retryable: bool,
    /// The request surely never reached AgentKit: even a non-idempotent action may be resent.
    not_sent: bool,
    retry_after: Option<Duration>,
}

impl AgentKitClient {
    /// A client with `credentials` already loaded from `config.credentials` (re-read from there).
    pub fn new(config: &AgentKitConfig, credentials: Credentials) -> Result<Self, AgentKitError> {
        Self::with_http(http_client()?, config, credentials)
    }

    /// A client loading its credentials as `config` says. Call once at cold start.
    pub async fn from_config(config: &AgentKitConfig) -> Result<Self, AgentKitError> {
        let http = http_client()?;
        let credentials = super::credentials::load(&config.credentials, &http).await?;
        Self::with_http(http, config, credentials)
    }

    /// As [`AgentKitClient::new`], reusing an HTTP client.
    pub fn with_http(
        http: reqwest::Client,
        config: &AgentKitConfig,
        credentials: Credentials,
    ) -> Result<Self, AgentKitError> {
        let invalid = |why: &str| AgentKitError::InvalidResponse {
            action: "configure",
            detail: format!("AGENTKIT_ENDPOINT {why}"),
        };
        let mut endpoint = Url::parse(&config.endpoint).map_err(|_| invalid("is not a URL"))?;
        endpoint.set_path("/");
        endpoint.set_query(None);
        let host_name = endpoint.host_str().ok_or_else(|| invalid("has no host"))?;
        // `Url::port` is None for a default port: the Python signer also drops :80/:443 from Host.
        let host = match endpoint.port() {
            Some(port) => format!("{host_name}:{port}"),
            None => host_name.to_string(),
        };
        if config.regions.is_empty() {
            return Err(invalid("has no region configured"));
        }
        Ok(AgentKitClient {
            transport: Arc::new(Https { http: http.clone() }),
            endpoint,
            host,
            regions: config.regions.clone(),
            credentials: Arc::new(CredentialsCell::new(
                config.credentials.clone(),
                http,
                credentials,
            )),
            reread_interval: REREAD_INTERVAL,
            retry: RetryPolicy::default(),
            request_timeout: config.request_timeout,
            budget: None,
        })
    }

    /// Ask `budget` before every attempt of every call (docs/agentkit.md, *Rate limits*).
    pub fn with_budget(mut self, budget: Arc<dyn CallBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Send requests through `transport` instead of HTTPS (a simulator in process).
    pub fn with_transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = transport;
        self
    }

    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The least time between credential re-reads, and the age that prompts one before a call.
    pub fn with_credentials_reread_interval(mut self, interval: Duration) -> Self {
        self.reread_interval = interval;
        self
    }

    pub fn regions(&self) -> &[String] {
        &self.regions
    }

    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Call `request` in `region`, retrying throttles and lost connections within `deadline`.
    pub async fn call<A: Action>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> Result<A::Output, AgentKitError> {
        let body = serde_json::to_vec(request).map_err(|e| AgentKitError::InvalidResponse {
            action: A::NAME,
            detail: format!("request did not serialise: {e}"),
        })?;
        self.credentials
            .refresh_if_stale(self.reread_interval, deadline)
            .await;
        let mut retry = 0;
        let mut resent_after_refusal = false;
        loop {
            if let Some(budget) = &self.budget {
                take_slot::<A>(budget.as_ref(), self.request_timeout, deadline).await?;
            }
            let current = self.credentials.current();
            let attempt = self.attempt::<A>(region, &body, deadline, &current.credentials);
            let failure = match attempt.await {
                Ok(out) => return Ok(out),
                Err(f) => f,
            };
            let throttled = matches!(failure.error, AgentKitError::Throttled { .. });
            // A Tool missing from a region is an answer, not a fault.
            if throttled {
                if let Some(budget) = &self.budget {
                    budget.refused(A::NAME).await;
                }
            }
            if throttled || !failure.error.is_not_found() {
                let name = if throttled {
                    "AgentKitThrottles"
                } else {
                    "AgentKitErrors"
                };
                invocation::emit(
                    Metric::of("agentkit")
                        .dimension("Action", A::NAME)
                        .rolled_up_by(&["Component"])
                        .count(name, 1),
                );
            }
            if failure.error.is_unauthorized() {
                let mut next = if resent_after_refusal {
                    AfterRefusal::GiveUp(Reread::RetriedOnce)
                } else {
                    let used = current.generation;
                    let interval = self.reread_interval;
                    self.credentials
                        .after_refusal(used, interval, deadline)
                        .await
                };
                // As before a first send: an answer cut short would leave the outcome unknown.
                let short = deadline.remaining() < self.request_timeout;
                if matches!(next, AfterRefusal::Retry) && !A::IDEMPOTENT && short {
                    next = AfterRefusal::GiveUp(Reread::ReplacedNotResent);
                }
                match next {
                    AfterRefusal::Retry => {
                        // Resent even when not idempotent: Volcengine authenticates before any
                        // action runs (spec: "a wrong signature gets an error envelope, HTTP
                        // 401"), so AgentKit did nothing. Once only: a second refusal is returned.
                        tracing::info!(
                            action = A::NAME,
                            region,
                            "agentkit refused the credentials; sent again with re-read ones"
                        );
                        resent_after_refusal = true;
                        continue;
                    }
                    AfterRefusal::GiveUp(outcome) => {
                        return Err(failure.error.with_reread(outcome))
                    }
                }
            }
            let may_resend = failure.not_sent || A::IDEMPOTENT;
            let wait = if failure.retryable && may_resend {
                self.retry.next_wait(retry, failure.retry_after, deadline)
            } else {
                None
            };
            let Some(wait) = wait else {
                return Err(match failure.error {
                    AgentKitError::Throttled { action, .. } => AgentKitError::Throttled {
                        action,
                        retry_after: failure.retry_after,
                    },
                    other => other,
                });
            };
            tracing::debug!(
                action = A::NAME,
                region,
                retry,
                wait_ms = wait.as_millis() as u64,
                error = %failure.error,
                "agentkit call will be retried"
            );
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }

    /// Call `request` in each region in turn, moving on only on `InvalidResource.NotFound` (the
    /// object or its Tool lives elsewhere): a throttled region is not a missing object.
    pub async fn call_any_region<A: Action>(
        &self,
        request: &A,
        deadline: Deadline,
    ) -> Result<Regional<A::Output>, AgentKitError> {
        let mut last = None;
        for region in &self.regions {
            match self.call(region, request, deadline).await {
                Ok(value) => {
                    return Ok(Regional {
                        region: region.clone(),
                        value,
                    })
                }
                Err(e) if e.is_not_found() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or(AgentKitError::NotFound {
            action: A::NAME,
            message: "no region configured".into(),
        }))
    }

    async fn attempt<A: Action>(
        &self,
        region: &str,
        body: &[u8],
        deadline: Deadline,
        credentials: &Credentials,
    ) -> Result<A::Output, Failure> {
        let timeout = self.request_timeout.min(deadline.remaining());
        if timeout.is_zero() {
            return Err(Failure {
                error: AgentKitError::Transport {
                    action: A::NAME,
                    detail: "the deadline passed before the request was sent".into(),
                    sent: false,
                },
                retryable: false,
                not_sent: true,
                retry_after: None,
            });
        }
        let query = [("Action", A::NAME), ("Version", API_VERSION)];
        let signed = signer::sign(
            credentials,
            region,
            OffsetDateTime::now_utc(),
            &signer::Request {
                host: &self.host,
                query: &query,
                content_type: JSON,
                body,
            },
        );
        let mut url = self.endpoint.clone();
        url.query_pairs_mut()
            .append_pair("Action", A::NAME)
            .append_pair("Version", API_VERSION);
        let mut headers = vec![
            ("Host", self.host.clone()),
            ("Content-Type", JSON.to_string()),
            ("X-Date", signed.x_date),
            ("X-Content-Sha256", signed.x_content_sha256),
            ("Authorization", signed.authorization),
        ];
        if let Some(token) = signed.x_security_token {
            headers.push(("X-Security-Token", token));
        }
        let outgoing = Outgoing {
            url,
            headers,
            body: body.to_vec(),
            timeout,
            limit: MAX_ANSWER_BYTES,
        };
        let answered = match self.transport.send(outgoing).await {
            Ok(a) => a,
            Err(NoAnswer::NotSent { detail }) => {
                tracing::info!(action = A::NAME, region, "agentkit call never left");
                return Err(Failure {
                    error: AgentKitError::Transport {
                        action: A::NAME,
                        detail,
                        sent: false,
                    },
                    retryable: true,
                    not_sent: true,
                    retry_after: None,
                });
            }
            Err(NoAnswer::Lost {
                detail,
                retry_after,
            }) => {
                tracing::info!(action = A::NAME, region, "agentkit call got no answer");
                return Err(Failure {
                    error: AgentKitError::Transport {
                        action: A::NAME,
                        detail,
                        sent: true,
                    },
                    retryable: true,
                    not_sent: false,
                    retry_after,
                });
            }
            Err(NoAnswer::TooLarge { limit }) => {
                tracing::warn!(
                    action = A::NAME,
                    region,
                    limit,
                    "agentkit answer over the cap; not read"
                );
                return Err(Failure {
                    error: AgentKitError::InvalidResponse {
                        action: A::NAME,
                        detail: format!("the answer is larger than {} MiB", limit / (1024 * 1024)),
                    },
                    // Same request, same answer; the outcome is unknown, as for any unreadable one.
                    retryable: false,
                    not_sent: false,
                    retry_after: None,
                });
            }
        };
        let (status, retry_after, bytes) = (answered.status, answered.retry_after, answered.body);
        tracing::debug!(action = A::NAME, region, status, "agentkit answered");
        read_envelope::<A>(status, &bytes).map_err(|error| {
            let retryable =
                answer::is_retry_status(status) || matches!(error, AgentKitError::Throttled { .. });
            // Only a 429 or a throttling code says AgentKit refused before acting; any 5xx (a
            // bare 503 too) may come after it acted: not resent unless idempotent
            // (docs/wake-protocol.md).
            let not_sent = status == 429 || matches!(error, AgentKitError::Throttled { .. });
            if !retryable {
                tracing::info!(
                    action = A::NAME,
                    region,
                    status,
                    code = error.code().unwrap_or(""),
                    "agentkit call failed"
                );
            }
            Failure {
                error,
                retryable,
                not_sent,
                retry_after,
            }
        })
    }
}

fn http_client() -> Result<reqwest::Client, AgentKitError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(3))
        .pool_idle_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| AgentKitError::Credentials(format!("HTTP client: {e}")))
}

/// Take a slot for one attempt of `A`. A non-idempotent action's must leave a whole
/// `request_timeout` before `deadline`; with none in time it is refused as throttled, unsent.
pub(super) async fn take_slot<A: Action>(
    budget: &dyn CallBudget,
    request_timeout: Duration,
    deadline: Deadline,
) -> Result<(), AgentKitError> {
    // Callers checked the whole timeout was left, so a slot free at once is always in time.
    let now = tokio::time::Instant::now();
    let latest = if A::IDEMPOTENT {
        deadline
    } else {
        let last = deadline.instant().checked_sub(request_timeout);
        Deadline::at(last.map_or(now, |last| last.max(now)))
    };
    budget
        .reserve(A::NAME, latest)
        .await
        .map_err(|NoSlot { free_in }| AgentKitError::Throttled {
            action: A::NAME,
            // Whole seconds, rounded up: a `Retry-After` of 0 would be asked again at once.
            retry_after: Some(Duration::from_secs(
                free_in.as_millis().div_ceil(1000).max(1) as u64,
            )),
        })
}

impl AgentKit for AgentKitClient {
    fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> impl Future<Output = Result<A::Output, AgentKitError>> + Send {
        // Boxed: a large future, awaited often (debug builds would need megabytes of stack).
        Box::pin(AgentKitClient::call(self, region, request, deadline))
    }

    fn regions(&self) -> &[String] {
        AgentKitClient::regions(self)
    }

    fn request_timeout(&self) -> Duration {
        AgentKitClient::request_timeout(self)
    }
}

#[cfg(test)]
mod tests;
