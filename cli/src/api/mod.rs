//! A small client of the deployed HTTP API (docs/http-api.md), for the commands that act on it
//! (`snapwake agents …`; a later `snapwake schedule …` takes the same [`ApiArgs`] and
//! [`Client`]). It sends the bearer token, reads every error as snapwake's problem+json or API
//! Gateway's own `{"message"}` ([`answer`]), asks again after throttling and busy answers with
//! bounded back-off ([`retry`]), and follows a wake's or a sleep's 202s to the end.
//!
//! The token is a [`Secret`]: it goes into one header, marked sensitive, and into no message,
//! log line or `Debug` output.

pub mod answer;
pub mod retry;

use std::time::{Duration, Instant};

use clap::Args;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION};
use reqwest::{Method, Url};
use serde_json::Value;
use snapwake::agentkit::types::Secret;

pub use answer::ApiError;

/// Where the API is and who is calling: shared by every command that uses the API.
#[derive(Debug, Args)]
pub struct ApiArgs {
    /// The API's base URL, with any stage or base path (e.g.
    /// https://abc123.execute-api.eu-west-1.amazonaws.com or https://example.com/api).
    #[arg(long, env = "SNAPWAKE_API_URL", global = true)]
    url: Option<String>,
    /// The bearer token API Gateway's JWT authorizer accepts (the one the page signs in
    /// for). Prefer the environment variable: a command line is visible to other users.
    #[arg(
        long,
        env = "SNAPWAKE_TOKEN",
        hide_env_values = true,
        global = true,
        value_parser = |s: &str| Ok::<_, std::convert::Infallible>(Secret::from(s.trim()))
    )]
    token: Option<Secret>,
    /// For `snapwake serve` only: act as this owner (its `X-Snapwake-User` header) instead of
    /// sending a token. The deployed API ignores it.
    #[arg(long, value_name = "OWNER", global = true)]
    local_user: Option<String>,
    /// For `snapwake serve` only, with --local-user: as an admin (`X-Snapwake-Admin: 1`).
    #[arg(long, global = true)]
    local_admin: bool,
    /// How many times to ask again after a throttled or busy answer (0–10).
    #[arg(long, default_value_t = 3, global = true,
          value_parser = clap::value_parser!(u32).range(0..=10))]
    retries: u32,
}

/// Who the requests say is calling.
enum Caller {
    Bearer(HeaderValue),
    Local { user: HeaderValue, admin: bool },
}

/// One request, described; [`Client::send`] may send it several times.
pub struct Call {
    pub method: Method,
    /// Path segments after the base URL, each percent-encoded on the way out.
    pub path: Vec<String>,
    pub query: Vec<(&'static str, String)>,
    pub body: Option<Value>,
    /// `Prefer: wait=<s>` (RFC 7240): let the API hold the request up to `s` seconds.
    pub prefer_wait: Option<u32>,
    /// Repeating it is harmless whatever the first attempt did (GET; wake and sleep, which
    /// the wake protocol makes idempotent). Decides whether an answer-less failure or API
    /// Gateway's timeout may be retried.
    pub idempotent: bool,
}

impl Call {
    pub fn get(path: Vec<String>) -> Call {
        Call {
            method: Method::GET,
            path,
            query: Vec::new(),
            body: None,
            prefer_wait: None,
            idempotent: true,
        }
    }
}

/// A 2xx answer.
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    /// The JSON body; `Null` when there is none (204).
    pub body: Value,
}

/// What a followed operation is called in messages: "waking", "wake".
pub struct Doing {
    pub agent: String,
    pub doing: &'static str,
    pub verb: &'static str,
}

pub struct Client {
    http: reqwest::Client,
    base: Url,
    caller: Caller,
    retries: u32,
}

/// The most of one answer read: a page of 100 agents is far below it; something in between
/// answering without end is not (docs/security.md, unbounded reads).
const MAX_ANSWER: usize = 8 << 20;

/// Longest a single request may take: the held wait (20 s) is inside API Gateway's own 30 s.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(45);

impl Client {
    /// The client for these arguments; a usage error when they cannot work.
    pub fn new(args: &ApiArgs) -> Result<Client, ApiError> {
        let url = args.url.as_deref().map(str::trim).unwrap_or_default();
        if url.is_empty() {
            return Err(ApiError::Usage(
                "which API? pass --url or set SNAPWAKE_API_URL".to_string(),
            ));
        }
        let base = Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or_else(|| ApiError::Usage(format!("--url {url:?} is not an http(s) URL")))?;
        let caller = match (&args.token, &args.local_user) {
            (Some(token), _) if !token.expose().is_empty() => {
                // A bearer token over plain HTTP is readable on the way: loopback only.
                if base.scheme() == "http" && !is_loopback(&base) {
                    return Err(ApiError::Usage(
                        "refusing to send the token over plain http to a host that is not \
                         loopback: use the API's https URL"
                            .to_string(),
                    ));
                }
                let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
                    .map_err(|_| {
                        ApiError::Usage(
                            "the token has characters an HTTP header cannot carry".to_string(),
                        )
                    })?;
                value.set_sensitive(true);
                Caller::Bearer(value)
            }
            (_, Some(user)) if !user.trim().is_empty() => Caller::Local {
                user: HeaderValue::from_str(user.trim()).map_err(|_| {
                    ApiError::Usage("--local-user must be printable ASCII".to_string())
                })?,
                admin: args.local_admin,
            },
            _ => {
                return Err(ApiError::Usage(
                    "no token: pass --token or set SNAPWAKE_TOKEN (or --local-user OWNER \
                     against snapwake serve)"
                        .to_string(),
                ))
            }
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("snapwake-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ApiError::Client(format!("HTTP client: {e}")))?;
        Ok(Client {
            http,
            base,
            caller,
            retries: args.retries,
        })
    }

    fn url(&self, call: &Call) -> Result<Url, ApiError> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|_| ApiError::Client("the API URL cannot take a path".to_string()))?
            .pop_if_empty()
            .extend(&call.path);
        if !call.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&call.query);
        }
        Ok(url)
    }

    /// One attempt: a 2xx as an [`Answer`], anything else read into an [`ApiError`].
    async fn once(&self, call: &Call) -> Result<Answer, ApiError> {
        let url = self.url(call)?;
        let mut req = self
            .http
            .request(call.method.clone(), url.clone())
            .header(ACCEPT, "application/json, application/problem+json");
        match &self.caller {
            Caller::Bearer(value) => req = req.header(AUTHORIZATION, value.clone()),
            Caller::Local { user, admin } => {
                req = req.header("x-snapwake-user", user.clone());
                if *admin {
                    req = req.header("x-snapwake-admin", "1");
                }
            }
        }
        if let Some(wait) = call.prefer_wait {
            req = req.header("prefer", format!("wait={wait}"));
        }
        if let Some(body) = &call.body {
            req = req.json(body);
        }
        // Named without its query: a cursor is nobody's business in an error line.
        let mut bare = url.clone();
        bare.set_query(None);
        let shown = format!("{} {bare}", call.method);
        let res = req.send().await.map_err(|e| unreachable(&shown, &e))?;
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let bytes = read_capped(res, &shown).await?;
        if !(200..300).contains(&status) {
            return Err(answer::read_error(status, &headers, &bytes));
        }
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).map_err(|_| ApiError::Unreadable {
                status,
                what: "a success body that is not JSON".to_string(),
            })?
        };
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// The request, asked again (at most `--retries` times, never past `deadline`) while its
    /// answer says that may help, after the answer's `Retry-After` or a back-off. Each retry
    /// is announced on stderr.
    pub async fn send(&self, call: &Call, deadline: Option<Instant>) -> Result<Answer, ApiError> {
        let attempts = self.retries + 1;
        let mut made = 1;
        loop {
            let err = match self.once(call).await {
                Ok(answer) => return Ok(answer),
                Err(err) => err,
            };
            let Some(hint) = err.retry(call.idempotent) else {
                return Err(err);
            };
            let wait = hint.unwrap_or_else(|| retry::backoff(made));
            let past_deadline = deadline.is_some_and(|d| Instant::now() + wait > d);
            if made >= attempts || past_deadline {
                return Err(if made > 1 {
                    ApiError::GaveUp {
                        attempts: made,
                        last: Box::new(err),
                    }
                } else {
                    err
                });
            }
            eprintln!(
                "snapwake: {}; asking again in {:.1} s (attempt {} of {attempts})",
                err.brief(),
                wait.as_secs_f64(),
                made + 1
            );
            tokio::time::sleep(wait).await;
            made += 1;
        }
    }

    /// A wake or sleep followed to its end: while the API answers 202 (still at work), wait
    /// its `Retry-After` and ask again, until a final answer or `timeout`. Asking again is
    /// what carries the operation on (docs/http-api.md, "resume"); it never starts a second.
    pub async fn follow(
        &self,
        call: &Call,
        doing: &Doing,
        timeout: Duration,
    ) -> Result<Answer, ApiError> {
        let started = Instant::now();
        let deadline = started + timeout;
        loop {
            let answer = self.send(call, Some(deadline)).await?;
            if answer.status != 202 {
                return Ok(answer);
            }
            // Never a hot loop, whatever Retry-After says.
            let wait = retry::retry_after(&answer.headers)
                .unwrap_or(Duration::from_secs(2))
                .max(Duration::from_millis(250));
            if Instant::now() + wait > deadline {
                return Err(ApiError::StillWorking {
                    agent: doing.agent.clone(),
                    doing: doing.doing,
                    verb: doing.verb,
                    waited: humantime::format_duration(Duration::from_secs(
                        started.elapsed().as_secs(),
                    ))
                    .to_string(),
                });
            }
            let state = answer
                .body
                .get("state")
                .and_then(Value::as_str)
                .unwrap_or("at work");
            eprintln!(
                "snapwake: {} is still {} ({state}); asking again in {:.1} s",
                doing.agent,
                doing.doing,
                wait.as_secs_f64()
            );
            tokio::time::sleep(wait).await;
        }
    }
}

/// The body, at most [`MAX_ANSWER`] bytes: the declared length checked first, chunked bodies
/// counted.
async fn read_capped(mut res: reqwest::Response, shown: &str) -> Result<Vec<u8>, ApiError> {
    let status = res.status().as_u16();
    let too_long = || ApiError::Unreadable {
        status,
        what: format!("more than {} MiB", MAX_ANSWER >> 20),
    };
    if res.content_length().is_some_and(|n| n > MAX_ANSWER as u64) {
        return Err(too_long());
    }
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(|e| unreachable(shown, &e))? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(too_long());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A request that got no answer, in words: the error chain without the URL (the request is
/// named by method and path; the query may hold a cursor nobody needs to read).
fn unreachable(shown: &str, err: &reqwest::Error) -> ApiError {
    let mut reason = if err.is_timeout() {
        "timed out".to_string()
    } else if err.is_connect() {
        "could not connect".to_string()
    } else {
        "the connection failed".to_string()
    };
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        reason.push_str(": ");
        reason.push_str(&s.to_string());
        source = s.source();
    }
    ApiError::Unreachable {
        url: shown.to_string(),
        reason,
        not_sent: err.is_connect(),
    }
}
