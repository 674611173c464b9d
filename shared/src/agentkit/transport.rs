//! The client's [`Transport`] port: bytes out, bytes back, and whether an unanswered request
//! surely never left. Deployed, HTTPS ([`Https`]); simulated, the simulator in process
//! (`snapwake_sim::InProcess`): over loopback, a paused clock would jump ahead mid-answer.
//! And [`CallBudget`], the budget the client asks before each attempt.

use super::answer::parse_retry_after;
use super::answer::{read_bounded, Unread};
use crate::invocation::Deadline;
use reqwest::header::{HeaderValue, RETRY_AFTER};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// One request, signed and ready to go.
#[derive(Clone, Debug)]
pub struct Outgoing {
    /// The endpoint with its query (`?Action=…&Version=…`).
    pub url: reqwest::Url,
    /// Every header to send, as signed (`Host` first).
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    /// How long the answer may take, whole body included.
    pub timeout: Duration,
    pub limit: usize,
}

#[derive(Clone, Debug)]
pub struct Answered {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoAnswer {
    /// It never reached AgentKit (no connection): whatever it asked was not done.
    NotSent {
        detail: String,
    },
    /// It may have reached AgentKit, but no answer came (timeout, dropped, cut short): maybe done.
    Lost {
        detail: String,
        retry_after: Option<Duration>,
    },
    TooLarge {
        limit: usize,
    },
}

/// An answer not yet arrived; boxed, as in `port.rs`.
pub type Sending<'a> = Pin<Box<dyn Future<Output = Result<Answered, NoAnswer>> + Send + 'a>>;

pub trait Transport: Send + Sync + 'static {
    fn send(&self, request: Outgoing) -> Sending<'_>;
}

/// HTTPS (or HTTP to a loopback endpoint) through reqwest: the deployed transport.
#[derive(Clone, Debug)]
pub struct Https {
    pub http: reqwest::Client,
}

impl Transport for Https {
    fn send(&self, request: Outgoing) -> Sending<'_> {
        Box::pin(async move {
            let mut builder = self
                .http
                .post(request.url)
                .timeout(request.timeout)
                .body(request.body);
            for (name, value) in &request.headers {
                builder = builder.header(*name, value);
            }
            let resp = builder.send().await.map_err(|e| {
                tracing::info!(
                    connect = e.is_connect(),
                    timeout = e.is_timeout(),
                    "agentkit call got no answer"
                );
                if e.is_connect() {
                    NoAnswer::NotSent { detail: detail(&e) }
                } else {
                    NoAnswer::Lost {
                        detail: detail(&e),
                        retry_after: None,
                    }
                }
            })?;
            let status = resp.status().as_u16();
            let retry_after = parse_retry_after(
                resp.headers()
                    .get(RETRY_AFTER)
                    .and_then(|v: &HeaderValue| v.to_str().ok()),
            );
            match read_bounded(resp, request.limit).await {
                Ok(body) => Ok(Answered {
                    status,
                    retry_after,
                    body,
                }),
                Err(Unread::TooLarge { limit }) => Err(NoAnswer::TooLarge { limit }),
                Err(Unread::Transport(e)) => Err(NoAnswer::Lost {
                    detail: detail(&e),
                    retry_after,
                }),
            }
        })
    }
}

/// The transport error without the URL (its query and host are not the caller's business).
fn detail(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_body() || e.is_decode() {
        "broken response body"
    } else {
        "request failed"
    };
    kind.to_string()
}

/// The client's hook into the deployment's AgentKit budget (`crate::budget`): a slot before
/// each attempt, a report of each throttle. A trait object: the client knows not where it lives.
pub type BudgetFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The budget has no slot for the call before the latest moment it could still be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoSlot {
    pub free_in: Duration,
}

pub trait CallBudget: Send + Sync + 'static {
    /// Wait for a slot of `action`'s budget that starts no later than `latest`, and take it.
    fn reserve(
        &self,
        action: &'static str,
        latest: Deadline,
    ) -> BudgetFuture<'_, Result<(), NoSlot>>;

    /// AgentKit refused a call of `action` as throttled: every caller slows down.
    fn refused(&self, action: &'static str) -> BudgetFuture<'_, ()>;
}
