//! The ports of AgentKit's side, each with what belongs to it:
//!
//! - [`AgentKit`]: what the wake protocol and handlers need of AgentKit, so tests can wrap the
//!   real client (to stop a holder at a chosen step, say) with no hook in production code; and
//!   walking its `NextToken` listings, guarded so a misbehaving one cannot loop or eat a
//!   Lambda's budget (a repeated token is an error, and so is a listing past the page cap);
//! - [`RateLimits`]: AgentKit's account-wide rate limits as assumed (unpublished;
//!   docs/agentkit.md, *Rate limits*), which `crate::budget` paces calls by and the simulator
//!   enforces;
//! - the client's own ports: [`Transport`] (bytes out, bytes back, and whether an unanswered
//!   request surely never left; deployed [`Https`], simulated `snapwake_sim::InProcess`, since
//!   over loopback a paused clock would jump ahead mid-answer) and [`CallBudget`], the budget it
//!   asks before each attempt. The client ([`super::AgentKitClient`]) implements [`AgentKit`].

use super::answer::{parse_retry_after, read_bounded, Unread};
use super::types::{
    Action, ListSessionSnapshots, ListSessions, ListTools, Session, Snapshot, Tool, MAX_PAGE_SIZE,
};
use super::AgentKitError;
use crate::invocation::Deadline;
use reqwest::header::{HeaderValue, RETRY_AFTER};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::time::Duration;

pub trait AgentKit: Send + Sync + 'static {
    /// Call `request` in `region` within `deadline` (retries included).
    fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> impl Future<Output = Result<A::Output, AgentKitError>> + Send;

    /// The configured regions, in the order they are tried.
    fn regions(&self) -> &[String];

    /// How long one attempt may take (`AGENTKIT_TIMEOUT_MS`). A non-idempotent action is never
    /// sent with less left (docs/wake-protocol.md): an answer cut short leaves its outcome unknown.
    fn request_timeout(&self) -> Duration {
        DEFAULT_REQUEST_TIMEOUT
    }
}

pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

impl<T: AgentKit> AgentKit for std::sync::Arc<T> {
    fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> impl Future<Output = Result<A::Output, AgentKitError>> + Send {
        (**self).call(region, request, deadline)
    }

    fn regions(&self) -> &[String] {
        (**self).regions()
    }

    fn request_timeout(&self) -> Duration {
        (**self).request_timeout()
    }
}

/// Pages of one agent's sessions read: it has at most one live session, so more is a fault.
pub const AGENT_SESSION_PAGES: usize = 20;

/// Pages of one agent's snapshots read: retention keeps few, but a delete must find them all.
pub const AGENT_SNAPSHOT_PAGES: usize = 100;

/// A listing action that pages with `NextToken`.
pub trait Paged: Action + Clone + 'static {
    type Item: Send;
    fn set_next_token(&mut self, token: Option<String>);
    fn set_page_size(&mut self, size: u32);
    fn into_page(output: Self::Output) -> (Vec<Self::Item>, Option<String>);
}

impl Paged for ListSessions {
    type Item = Session;
    fn set_next_token(&mut self, token: Option<String>) {
        self.next_token = token;
    }
    fn set_page_size(&mut self, size: u32) {
        self.max_results = Some(size);
    }
    fn into_page(o: Self::Output) -> (Vec<Session>, Option<String>) {
        (o.session_infos, o.next_token)
    }
}

impl Paged for ListSessionSnapshots {
    type Item = Snapshot;
    fn set_next_token(&mut self, token: Option<String>) {
        self.next_token = token;
    }
    fn set_page_size(&mut self, size: u32) {
        self.max_results = Some(size);
    }
    fn into_page(o: Self::Output) -> (Vec<Snapshot>, Option<String>) {
        (o.snapshots, o.next_token)
    }
}

impl Paged for ListTools {
    type Item = Tool;
    fn set_next_token(&mut self, token: Option<String>) {
        self.next_token = token;
    }
    fn set_page_size(&mut self, size: u32) {
        self.max_results = Some(size);
    }
    fn into_page(o: Self::Output) -> (Vec<Tool>, Option<String>) {
        (o.tools, o.next_token)
    }
}

/// Pages of one listing in one region, fetched on demand.
pub struct Pager<'c, K: AgentKit, A: Paged> {
    client: &'c K,
    region: String,
    request: A,
    seen: HashSet<String>,
    pages: usize,
    page_cap: usize,
    next: Option<String>,
    done: bool,
}

impl<'c, K: AgentKit, A: Paged> Pager<'c, K, A> {
    /// Page `request` in `region`, at most `page_cap` pages, from its own `NextToken` (a cursor).
    pub fn new(client: &'c K, region: &str, request: A, page_cap: usize) -> Self {
        Pager {
            client,
            region: region.to_string(),
            request,
            seen: HashSet::new(),
            pages: 0,
            page_cap,
            next: None,
            done: false,
        }
    }

    /// The next page's token (`None` before the first and at the end): a caller's cursor.
    pub fn next_token(&self) -> Option<&str> {
        self.next.as_deref()
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    pub async fn next_page(
        &mut self,
        deadline: Deadline,
    ) -> Result<Option<Vec<A::Item>>, AgentKitError> {
        if self.done {
            return Ok(None);
        }
        if self.pages >= self.page_cap {
            return Err(AgentKitError::InvalidResponse {
                action: A::NAME,
                detail: format!("listing has more than {} pages", self.page_cap),
            });
        }
        let out = self
            .client
            .call(&self.region, &self.request, deadline)
            .await?;
        self.pages += 1;
        let (items, token) = A::into_page(out);
        match token.filter(|t| !t.is_empty()) {
            None => {
                self.done = true;
                self.next = None;
            }
            Some(t) => {
                if !self.seen.insert(t.clone()) {
                    return Err(AgentKitError::InvalidResponse {
                        action: A::NAME,
                        detail: "NextToken repeated: the listing would loop".into(),
                    });
                }
                self.next = Some(t.clone());
                self.request.set_next_token(Some(t));
            }
        }
        Ok(Some(items))
    }
}

/// Every item of a listing in `region`, at most `page_cap` pages of the largest size.
pub async fn list_all<K: AgentKit, A: Paged>(
    client: &K,
    region: &str,
    mut request: A,
    page_cap: usize,
    deadline: Deadline,
) -> Result<Vec<A::Item>, AgentKitError> {
    request.set_page_size(MAX_PAGE_SIZE);
    let mut pager = Pager::new(client, region, request, page_cap);
    let mut all = Vec::new();
    while let Some(items) = pager.next_page(deadline).await? {
        all.extend(items);
    }
    Ok(all)
}

/// The one limit CreateTool and UpdateTool share.
pub const TOOL_WRITES: &str = "ToolWrites";

/// Tool writes per second: observed at about 3.
pub const DEFAULT_TOOL_WRITE_LIMIT: u32 = 3;

/// The session writes, assumed limited to 20 a second each.
const SESSION_WRITES: [&str; 6] = [
    "CreateSession",
    "ResumeSessionFromSnapshot",
    "CreateSessionSnapshot",
    "DeleteSession",
    "DeleteSessionSnapshot",
    "SetSessionTtl",
];
/// The reads and listings, assumed limited to 50 a second each.
const READS: [&str; 6] = [
    "GetSession",
    "ListSessions",
    "ListSessionSnapshots",
    "GetSessionSnapshot",
    "ListTools",
    "GetTool",
];

pub fn limit_of(action: &str) -> &str {
    match action {
        "CreateTool" | "UpdateTool" => TOOL_WRITES,
        other => other,
    }
}

fn is_known(name: &str) -> bool {
    name == TOOL_WRITES
        || matches!(name, "CreateTool" | "UpdateTool")
        || SESSION_WRITES.contains(&name)
        || READS.contains(&name)
}

/// Requests per second per limit ([`limit_of`]); a limit not named is off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimits(pub BTreeMap<String, u32>);

impl RateLimits {
    pub fn off() -> Self {
        RateLimits(BTreeMap::new())
    }

    pub fn tool_writes() -> Self {
        RateLimits::off().with(TOOL_WRITES, Some(DEFAULT_TOOL_WRITE_LIMIT))
    }

    /// Every action limited as AgentKit is assumed to limit it.
    pub fn agentkit() -> Self {
        let mut limits = RateLimits::tool_writes();
        for action in SESSION_WRITES {
            limits.set(action, Some(20));
        }
        for action in READS {
            limits.set(action, Some(50));
        }
        limits
    }

    /// These limits with `limit` (an action, or [`TOOL_WRITES`]) at `per_second` (`None`: off).
    pub fn with(mut self, limit: &str, per_second: Option<u32>) -> Self {
        self.set(limit, per_second);
        self
    }

    pub fn set(&mut self, limit: &str, per_second: Option<u32>) {
        match per_second {
            Some(n) => self.0.insert(limit_of(limit).to_string(), n),
            None => self.0.remove(limit_of(limit)),
        };
    }

    pub fn per_second(&self, action: &str) -> Option<u32> {
        self.0.get(limit_of(action)).copied()
    }

    /// `agentkit`, `tools` or `off`, then any number of `,Action=N` or `,Action=off`
    /// (`agentkit,ResumeSessionFromSnapshot=50`); `known` says which names may be limited.
    pub fn parse(text: &str, known: impl Fn(&str) -> bool) -> Result<Self, String> {
        let mut parts = text.split(',').map(str::trim);
        let mut limits = match parts.next().unwrap_or_default() {
            "agentkit" => RateLimits::agentkit(),
            "tools" | "" => RateLimits::tool_writes(),
            "off" => RateLimits::off(),
            other => {
                return Err(format!(
                    "{other:?} is not agentkit, tools or off (then Action=N, ...)"
                ))
            }
        };
        for part in parts.filter(|p| !p.is_empty()) {
            let (action, n) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?} is not Action=N or Action=off"))?;
            if !known(action) {
                return Err(format!("{action:?} is not an AgentKit action"));
            }
            let per_second = match n {
                "off" => None,
                n => Some(
                    n.parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| format!("{n:?} is not a number of requests per second"))?,
                ),
            };
            limits.set(action, per_second);
        }
        Ok(limits)
    }
}

impl FromStr for RateLimits {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        RateLimits::parse(text, is_known)
    }
}

// The client's [`Transport`] port: bytes out, bytes back, and whether an unanswered request
// surely never left. Deployed, HTTPS ([`Https`]); simulated, the simulator in process
// (`snapwake_sim::InProcess`): over loopback, a paused clock would jump ahead mid-answer.
// And [`CallBudget`], the budget the client asks before each attempt.
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

#[cfg(test)]
mod pagination_tests;

#[cfg(test)]
mod limits_tests;
