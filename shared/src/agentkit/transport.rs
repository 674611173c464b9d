//! How a signed request reaches AgentKit and its answer comes back: the [`Transport`] port of
//! the client. Deployed, it is HTTPS through reqwest ([`Https`]). A simulated deployment hands
//! the very same request (signed, with its headers and body) to the simulator in process
//! (`snapwake_sim::InProcess`), so that the client's signing, envelope, retries and budget all
//! run unchanged, on the one clock the simulation keeps (docs/testing.md, "One simulated
//! deployment"): over loopback sockets, a paused clock would jump ahead while an answer is on
//! its way.
//!
//! A transport knows nothing of AgentKit: it sends bytes and reads bytes, and says whether a
//! request that got no answer surely never left (so that even a non-idempotent action may be
//! sent again) or may have been acted on.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use reqwest::header::{HeaderValue, RETRY_AFTER};

use super::bounded::{read_bounded, Unread};
use super::retry::parse_retry_after;

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
    /// The most bytes of answer read.
    pub limit: usize,
}

/// An answer, read whole.
#[derive(Clone, Debug)]
pub struct Answered {
    pub status: u16,
    /// Its `Retry-After`, if it had one that reads as a wait.
    pub retry_after: Option<Duration>,
    pub body: Vec<u8>,
}

/// Why a request got no answer to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoAnswer {
    /// It never reached AgentKit (no connection): whatever it asked was not done.
    NotSent { detail: String },
    /// It may have reached AgentKit, and the answer did not come (a timeout, a connection
    /// dropped, a body cut short): what it asked may have been done.
    Lost {
        detail: String,
        retry_after: Option<Duration>,
    },
    /// The answer is longer than the limit (not read).
    TooLarge { limit: usize },
}

/// An answer not yet arrived. Boxed: an HTTP request is a large future, and the protocol code
/// awaits many of them (debug builds would otherwise need megabytes of stack per request).
pub type Sending<'a> = Pin<Box<dyn Future<Output = Result<Answered, NoAnswer>> + Send + 'a>>;

/// Where the client's requests go.
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

/// The transport error without the URL (it holds nothing secret today, but the query and host
/// are not the caller's business either).
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
