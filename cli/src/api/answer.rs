//! Reading the deployed API's error answers. Two parties answer errors there: snapwake's
//! functions, always as RFC 9457 problem+json, and API Gateway itself, before or instead of a
//! function, as `{"message": "..."}` (docs/http-api.md, "Errors API Gateway answers itself").
//! [`ApiError`] says which of the two answered, or that neither shape could be read, in words
//! an operator can act on.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde::Deserialize;

/// Exit code for "sign in again" (sysexits' EX_NOPERM), so scripts can tell it apart.
pub const EXIT_SIGN_IN: u8 = 77;
/// Exit code for "busy or still at work: run it again later" (sysexits' EX_TEMPFAIL).
pub const EXIT_TRY_LATER: u8 = 75;

/// snapwake's own problem+json (`shared/src/http/problem.rs`); every field optional, so an
/// older or newer server's problem still reads. Its status is the answer's.
#[derive(Debug, Default, Deserialize)]
pub struct Problem {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub detail: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub retryable: bool,
    #[serde(default)]
    pub request_id: Option<String>,
}

/// An answer API Gateway wrote itself: its status, its `message` and what its headers add.
#[derive(Debug)]
pub struct GatewayAnswer {
    pub status: u16,
    pub message: String,
    /// `apigw-requestid`: what the operators look the request up by in the access log.
    pub request_id: Option<String>,
    /// The JWT authorizer's `error_description` from `www-authenticate` (why the token was
    /// refused: expired, wrong audience, ...). API Gateway's own words, never the token.
    pub why: Option<String>,
}

/// Why a request to the deployed API did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// snapwake answered with a problem.
    #[error("{}", problem_text(.status, .problem))]
    Problem {
        status: u16,
        problem: Problem,
        retry_after: Option<Duration>,
    },
    /// API Gateway answered itself (`{"message"}`).
    #[error("{}", gateway_text(.answer))]
    Gateway {
        answer: GatewayAnswer,
        retry_after: Option<Duration>,
    },
    /// Neither shape: a proxy's page, an empty body, a wrong `--url`.
    #[error(
        "the API answered {status} with {what}, neither snapwake's problem+json nor API \
         Gateway's {{\"message\"}}: is --url the snapwake API (with its stage or base path)?"
    )]
    Unreadable { status: u16, what: String },
    /// No answer at all.
    #[error("no answer from {url}: {reason}")]
    Unreachable {
        url: String,
        reason: String,
        /// The request never left (a refused connection): always safe to send again.
        not_sent: bool,
    },
    /// A retryable answer kept coming back; `last` is the final one.
    /// The command line asks for something that cannot be sent (a bad `--url`, a token over
    /// plain http to another host): exit 2, as clap's own usage errors.
    #[error("{0}")]
    Usage(String),
    #[error("{last} (tried {attempts} times)")]
    GaveUp { attempts: u32, last: Box<ApiError> },
    /// A wake or sleep still under way when `--timeout` ran out. It goes on without us.
    #[error(
        "{agent} is still {doing} after {waited}; snapwake carries on without this command: \
         run it again to follow it (it never starts a second {verb})"
    )]
    StillWorking {
        agent: String,
        doing: &'static str,
        verb: &'static str,
        waited: String,
    },
    /// The client could not be built or the request not formed (never the token's value).
    #[error("{0}")]
    Client(String),
}

impl ApiError {
    /// 77 when a fresh token is the fix, 75 when running it again later is, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            ApiError::Gateway { answer, .. } if matches!(answer.status, 401 | 403) => EXIT_SIGN_IN,
            ApiError::Problem { status: 401, .. } => EXIT_SIGN_IN,
            ApiError::GaveUp { .. } | ApiError::StillWorking { .. } => EXIT_TRY_LATER,
            ApiError::Usage(_) => 2,
            _ => 1,
        }
    }

    /// Whether asking again may help, and after how long the answer asked for. `idempotent`:
    /// the request may be repeated whatever the first one did (a GET, a wake, a sleep).
    ///
    /// - API Gateway's 429 throttled the request before any function saw it: always.
    /// - API Gateway's 503/504 (it stopped waiting for the function, which may still be at
    ///   work): only an idempotent request.
    /// - snapwake's retryable 409, 429 and 503 say nothing was done and when to ask again.
    /// - No answer: a request that never left, always; one that may have, if idempotent.
    pub fn retry(&self, idempotent: bool) -> Option<Option<Duration>> {
        match self {
            ApiError::Gateway {
                answer,
                retry_after,
            } => match answer.status {
                429 => Some(*retry_after),
                503 | 504 if idempotent => Some(*retry_after),
                _ => None,
            },
            ApiError::Problem {
                status,
                problem,
                retry_after,
            } if problem.retryable && matches!(status, 409 | 429 | 503) => Some(*retry_after),
            ApiError::Unreachable { not_sent, .. } if *not_sent || idempotent => Some(None),
            _ => None,
        }
    }

    /// One line for a retry notice: who answered what, without the advice.
    pub fn brief(&self) -> String {
        match self {
            ApiError::Gateway { answer, .. } => format!(
                "API Gateway answered {} {}",
                answer.status,
                reason(answer.status, &answer.message)
            ),
            ApiError::Problem {
                status, problem, ..
            } => format!(
                "snapwake answered {status} {}",
                problem.code.as_deref().unwrap_or("(no code)")
            ),
            other => other.to_string(),
        }
    }
}

/// Read a non-2xx answer: problem+json, API Gateway's `{"message"}`, or neither.
pub fn read_error(status: u16, headers: &HeaderMap, body: &[u8]) -> ApiError {
    let retry_after = super::retry::retry_after(headers);
    let content_type = header(headers, "content-type").unwrap_or_default();
    let json: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let Some(serde_json::Value::Object(map)) = json else {
        return ApiError::Unreadable {
            status,
            what: describe_body(&content_type, body),
        };
    };
    // snapwake's problems always carry a title (and the problem+json media type).
    let is_problem = content_type.starts_with("application/problem+json")
        || map.get("title").is_some_and(|t| t.is_string());
    if is_problem {
        let problem = serde_json::from_value(serde_json::Value::Object(map)).unwrap_or_default();
        return ApiError::Problem {
            status,
            problem,
            retry_after,
        };
    }
    match map.get("message").and_then(|m| m.as_str()) {
        Some(message) => ApiError::Gateway {
            answer: GatewayAnswer {
                status,
                message: clean(message, 80),
                request_id: header(headers, "apigw-requestid").map(|id| clean(&id, 80)),
                why: header(headers, "www-authenticate")
                    .and_then(|h| error_description(&h))
                    .map(|d| clean(&d, 160)),
            },
            retry_after,
        },
        None => ApiError::Unreadable {
            status,
            what: "a JSON object of another shape".to_string(),
        },
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// What a body was, without printing it: it may be anything a proxy says.
fn describe_body(content_type: &str, body: &[u8]) -> String {
    if body.is_empty() {
        return "an empty body".to_string();
    }
    let kind = content_type.split(';').next().unwrap_or("").trim();
    let kind = if kind.is_empty() {
        "no Content-Type"
    } else {
        kind
    };
    format!("{} bytes of {}", body.len(), clean(kind, 60))
}

/// Text from the network, made safe for a terminal: no control characters, bounded.
fn clean(text: &str, max: usize) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect();
    if text.chars().count() > max {
        out.push('…');
    }
    out
}

/// `error_description="..."` of a `www-authenticate: Bearer ...` header.
fn error_description(header: &str) -> Option<String> {
    let start = header.find("error_description=\"")? + "error_description=\"".len();
    let rest = &header[start..];
    let end = rest.find('"')?;
    Some(rest[..end].to_string()).filter(|d| !d.trim().is_empty())
}

/// The status's reason phrase as API Gateway wrote it, else the standard one.
fn reason(status: u16, message: &str) -> String {
    if !message.trim().is_empty() {
        return message.to_string();
    }
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
        .to_string()
}

fn problem_text(status: &u16, problem: &Problem) -> String {
    let title = problem.title.as_deref().unwrap_or("Request failed");
    let code = problem.code.as_deref().unwrap_or("no code");
    let mut text = format!("{title} ({status} {code})");
    if let Some(detail) = problem.detail.as_deref().filter(|d| !d.is_empty()) {
        text.push_str(": ");
        text.push_str(&clean(detail, 400));
    }
    if problem.retryable {
        text.push_str("; it may work if you run the command again");
    }
    if let Some(id) = &problem.request_id {
        text.push_str(&format!(" (request {})", clean(id, 80)));
    }
    text
}

fn gateway_text(answer: &GatewayAnswer) -> String {
    let said = format!(
        "{} {}",
        answer.status,
        reason(answer.status, &answer.message)
    );
    let mut text = match answer.status {
        401 => {
            let why = answer
                .why
                .as_ref()
                .map(|w| format!(": {w}"))
                .unwrap_or_default();
            format!(
                "API Gateway refused the token ({said}{why}): sign in again for a fresh token \
                 (--token or SNAPWAKE_TOKEN)"
            )
        }
        403 => format!(
            "API Gateway refused the request ({said}): the token lacks a scope this route \
             needs; sign in again with the right scopes"
        ),
        404 => format!(
            "API Gateway has no such route ({said}): check --url, which must include any \
             stage or base path (e.g. https://…/prod)"
        ),
        413 => format!("API Gateway refused the request as too large ({said})"),
        429 => format!(
            "API Gateway throttled the request ({said}): the API's rate limit was reached; \
             wait a minute and run the command again"
        ),
        503 | 504 => format!(
            "API Gateway stopped waiting for snapwake ({said}): the function did not answer \
             within the gateway's 30 s; it may still have acted, and a wake or sleep is safe \
             to run again"
        ),
        500 | 502 => format!(
            "snapwake's function failed without an answer (API Gateway {said}): report it to \
             the operators"
        ),
        _ => format!("API Gateway answered {said}"),
    };
    if let Some(id) = &answer.request_id {
        text.push_str(&format!(" (request {id})"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("header"));
        }
        h
    }

    #[test]
    fn the_authorizers_401_names_api_gateway_and_why() {
        let err = read_error(
            401,
            &headers(&[
                ("content-type", "application/json"),
                (
                    "www-authenticate",
                    r#"Bearer scope="" error="invalid_token" error_description="the token has expired""#,
                ),
                ("apigw-requestid", "Mc7UVioPPHcEKPA="),
            ]),
            br#"{"message":"Unauthorized"}"#,
        );
        assert_eq!(
            err.to_string(),
            "API Gateway refused the token (401 Unauthorized: the token has expired): sign in \
             again for a fresh token (--token or SNAPWAKE_TOKEN) (request Mc7UVioPPHcEKPA=)"
        );
        assert_eq!(err.exit_code(), EXIT_SIGN_IN);
        assert_eq!(err.retry(true), None);
    }

    #[test]
    fn a_problem_is_read_as_snapwakes() {
        let err = read_error(
            409,
            &headers(&[
                ("content-type", "application/problem+json"),
                ("retry-after", "2"),
            ]),
            br#"{"type":"urn:snapwake:problem:agent-busy","title":"Agent busy","status":409,
                "detail":"a wake holds the agent","code":"AGENT_BUSY","retryable":true,
                "request_id":"r-1"}"#,
        );
        assert_eq!(
            err.to_string(),
            "Agent busy (409 AGENT_BUSY): a wake holds the agent; it may work if you run the \
             command again (request r-1)"
        );
        assert_eq!(err.retry(false), Some(Some(Duration::from_secs(2))));
    }

    #[test]
    fn gateway_timeouts_are_retried_only_when_repeating_is_safe() {
        let err = read_error(
            503,
            &HeaderMap::new(),
            br#"{"message":"Service Unavailable"}"#,
        );
        assert_eq!(err.retry(true), Some(None));
        assert_eq!(err.retry(false), None);
        let throttled = read_error(
            429,
            &HeaderMap::new(),
            br#"{"message":"Too Many Requests"}"#,
        );
        assert_eq!(throttled.retry(false), Some(None));
        let crashed = read_error(
            500,
            &HeaderMap::new(),
            br#"{"message":"Internal Server Error"}"#,
        );
        assert_eq!(crashed.retry(true), None);
        assert!(crashed.to_string().contains("report it"), "{crashed}");
    }

    #[test]
    fn anything_else_is_unreadable_and_not_printed() {
        let err = read_error(
            502,
            &headers(&[("content-type", "text/html; charset=utf-8")]),
            b"<html><body>\x1b[31mbad gateway</body></html>",
        );
        let text = err.to_string();
        assert!(text.contains("42 bytes of text/html"), "{text}");
        assert!(!text.contains("bad gateway"), "{text}");
        let empty = read_error(504, &HeaderMap::new(), b"");
        assert!(empty.to_string().contains("an empty body"), "{empty}");
    }

    #[test]
    fn network_text_cannot_drive_the_terminal() {
        assert_eq!(clean("a\x1b[2Jb\nc", 80), "a [2Jb c");
        assert_eq!(clean("abcdef", 3), "abc…");
    }
}
