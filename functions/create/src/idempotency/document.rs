//! The idempotency record of `POST /v1/agents`: the `Idempotency-Key` header, the request
//! fingerprint, the document kept in the table, and a response captured so that it can be
//! replayed byte for byte. The protocol that uses them is the parent module's.

use std::collections::BTreeMap;

use lambda_http::http::header::{self, HeaderName};
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use snapwake::domain::{Kind, Retention};
use snapwake::error::{Error, Result};
use snapwake::identity::caller;
use snapwake::store::DocumentKey;

/// The request header carrying the key.
pub const HEADER: &str = "idempotency-key";
/// The longest key accepted.
pub const MAX_KEY_LEN: usize = 200;
/// How long a key is kept: 24 h.
pub const KEEP_S: i64 = 24 * 60 * 60;
/// The sort key of every idempotency document.
pub const SK: &str = "IDEM";

/// The `Idempotency-Key` of a request: `None` when absent; 1–200 characters of
/// `[A-Za-z0-9_.:-]`, else 400.
pub fn key(request: &Request) -> Result<Option<String>> {
    let Some(raw) = request.headers().get(HEADER) else {
        return Ok(None);
    };
    let valid = raw.to_str().ok().filter(|k| {
        (1..=MAX_KEY_LEN).contains(&k.len())
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
    });
    match valid {
        Some(k) => Ok(Some(k.to_string())),
        None => Err(Error::bad_request(
            "Idempotency-Key must be 1-200 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-'",
        )),
    }
}

/// The partition key of `owner`'s `key`: `IDEM#<owner_key>#<key>`. The owner key
/// (`studio-<safe_owner>`) only has `[A-Za-z0-9_-]` and the key no `#`, so two owners or two
/// keys never share a document.
pub fn pk(owner: &str, key: &str) -> String {
    format!("IDEM#{}#{key}", caller::owner_keys(owner)[0])
}

pub fn document_key(pk: &str) -> DocumentKey<'_> {
    DocumentKey { pk, sk: SK }
}

/// Hex SHA-256 of the request as it was understood: kind, trimmed display name, and the
/// retention as resolved (an omitted retention counts as the default it resolved to).
pub fn fingerprint(kind: Kind, display_name: &str, retention: Retention) -> String {
    #[derive(Serialize)]
    struct Canonical<'a> {
        kind: Kind,
        display_name: &'a str,
        retention: Retention,
    }
    let canonical = serde_json::to_vec(&Canonical {
        kind,
        display_name,
        retention,
    })
    .unwrap_or_default();
    hex::encode(Sha256::digest(&canonical))
}

/// Where an idempotent create stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// An invocation is creating the agent.
    Running,
    /// The create answered; `response` is replayed to every retry.
    Done,
    /// The create failed in a way a retry may fix (5xx, 429): the next request with the key
    /// runs again, with the same UserSessionId, reconciling first.
    Failed,
}

/// The stored document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdemDoc {
    pub fingerprint: String,
    pub state: State,
    /// The UserSessionId minted by the first attempt: every attempt with this key creates (or
    /// adopts) exactly this agent, never another.
    pub user_session_id: String,
    /// Random token of the invocation that wrote `running`; recognises our own write when the
    /// SDK retried it and reported a conflict.
    pub attempt: String,
    /// When the running attempt started (epoch ms); a `running` document older than
    /// [`crate::STALE_RUNNING`] belongs to an invocation that died.
    pub started_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

impl IdemDoc {
    pub fn running(fingerprint: &str, user_session_id: &str, attempt: &str, now_ms: u64) -> Self {
        IdemDoc {
            fingerprint: fingerprint.to_string(),
            state: State::Running,
            user_session_id: user_session_id.to_string(),
            attempt: attempt.to_string(),
            started_at_ms: now_ms,
            status: None,
            headers: BTreeMap::new(),
            body: None,
        }
    }

    /// The finished document: `done` with the answer, or `failed` (released) after a 5xx/429.
    pub fn finished(mut self, answer: &Stored) -> Self {
        if answer.is_final() {
            self.state = State::Done;
            self.status = Some(answer.status);
            self.headers = answer.headers.clone();
            self.body = Some(answer.body.clone());
        } else {
            self.state = State::Failed;
        }
        self
    }

    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    pub fn from_value(value: &serde_json::Value) -> Result<Self> {
        serde_json::from_value(value.clone())
            .map_err(|e| Error::Internal(format!("unreadable idempotency document: {e}")))
    }

    /// The stored answer of a `done` document.
    pub fn answer(&self) -> Option<Stored> {
        Some(Stored {
            status: self.status?,
            headers: self.headers.clone(),
            body: self.body.clone()?,
        })
    }
}

/// Headers kept with a stored answer (everything else is transport noise).
const KEPT_HEADERS: [HeaderName; 4] = [
    header::CONTENT_TYPE,
    header::LOCATION,
    header::ETAG,
    header::RETRY_AFTER,
];

/// A response reduced to what is stored and replayed: status, the headers that matter, body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

impl Stored {
    pub fn capture(resp: &Response<Body>) -> Self {
        let headers = KEPT_HEADERS
            .iter()
            .filter_map(|name| {
                let value = resp.headers().get(name)?.to_str().ok()?;
                Some((name.as_str().to_string(), value.to_string()))
            })
            .collect();
        let body = match resp.body() {
            Body::Text(t) => t.clone(),
            Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        Stored {
            status: resp.status().as_u16(),
            headers,
            body,
        }
    }

    /// Whether this answer is the final word for its key: a success or a client error. A 5xx,
    /// a 429, a 409 (the agent is held by an attempt whose outcome is not known yet) or a 202
    /// (CreateSession unsettled: the session may still appear) is not: a retry may succeed.
    pub fn is_final(&self) -> bool {
        self.status < 500 && !matches!(self.status, 202 | 409 | 429)
    }

    pub fn to_response(&self) -> Response<Body> {
        let mut builder = Response::builder().status(self.status);
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        builder
            .body(Body::Text(self.body.clone()))
            .unwrap_or_else(|_| Response::new(Body::Empty))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_differ_by_every_field_and_are_stable() {
        let a = fingerprint(Kind::Codex, "Helper", Retention::Recoverable);
        assert_eq!(
            a,
            fingerprint(Kind::Codex, "Helper", Retention::Recoverable)
        );
        assert_eq!(a.len(), 64);
        assert_ne!(
            a,
            fingerprint(Kind::Hermes, "Helper", Retention::Recoverable)
        );
        assert_ne!(
            a,
            fingerprint(Kind::Codex, "Helper2", Retention::Recoverable)
        );
        assert_ne!(a, fingerprint(Kind::Codex, "Helper", Retention::Temporary));
    }

    #[test]
    fn keys_are_scoped_by_owner() {
        assert_eq!(pk("alice", "k-1"), "IDEM#studio-alice#k-1");
        assert_ne!(pk("alice@example.com", "k"), pk("alice", "k"));
    }

    #[test]
    fn documents_round_trip_and_only_final_answers_are_kept() {
        let doc = IdemDoc::running("f", "studio-alice-00", "t", 5);
        let ok = Stored {
            status: 201,
            headers: BTreeMap::from([("location".into(), "/v1/agents/codex/x".into())]),
            body: "{}".into(),
        };
        let done = doc.clone().finished(&ok);
        assert_eq!(done.state, State::Done);
        assert_eq!(IdemDoc::from_value(&done.to_value()).unwrap(), done);
        assert_eq!(done.answer().unwrap(), ok);
        let throttled = Stored {
            status: 429,
            ..ok.clone()
        };
        let released = doc.finished(&throttled);
        assert_eq!(released.state, State::Failed);
        assert!(released.answer().is_none());
    }
}
