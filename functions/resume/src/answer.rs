//! How the function's routes answer: the agent view, its `ETag`, and a 202 that says to ask
//! again.

use lambda_http::http::header;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use snapwake::agentkit::types::{Session, Snapshot};
use snapwake::agentkit::AgentKit;
use std::time::Duration;

use snapwake::deadline::{Deadline, Pace};
use snapwake::domain::{AgentKey, AgentRecord, AgentView, Retention};
use snapwake::http::prefer;
use snapwake::http::request as req;
use snapwake::http::response;
use snapwake::locate::sessions::snapshots;
use snapwake::locate::Home;
use snapwake::store::AgentStore;
use snapwake::timestamp::now_ms;
use snapwake::view::record_snapshots;
use snapwake::view::{agent_view, AgentFacts};
use snapwake::wake::WakeSettings;

use crate::Resume;

/// The view of the agent from its record and what this request saw of AgentKit.
pub(crate) fn view(
    key: &AgentKey,
    record: &AgentRecord,
    sessions: &[Session],
    snapshots: &[Snapshot],
    settings: &WakeSettings,
) -> AgentView {
    agent_view(
        &AgentFacts {
            key,
            record: Some(record),
            sessions,
            snapshots,
            retention: record
                .description
                .retention
                .unwrap_or(Retention::Recoverable),
            open_url: settings.open_url.as_ref(),
        },
        now_ms(),
        &settings.lock,
    )
}

/// `status` with `body`, and the record's version as the `ETag`.
pub(crate) fn with_etag<T: Serialize>(
    status: u16,
    body: &T,
    record: &AgentRecord,
) -> Response<Body> {
    response::with_etag(response::json(status, body), record)
}

/// A 202: still at work; ask again after `Retry-After`, or read the agent at `Location`.
/// `Retry-After` is the pause a poller keeps between two questions to AgentKit about this
/// work (one second at first, longer once it has taken a while): a client that honours it
/// sees the 200 within about one pause of the work being done (docs/wake-protocol.md, "Short
/// requests").
pub(crate) fn accepted<T: Serialize>(
    body: &T,
    record: &AgentRecord,
    request: &Request,
    pace: Pace,
) -> Response<Body> {
    let mut resp = response::with_location(
        with_etag(202, body, record),
        &req::prefix(request),
        &record.key,
    );
    let retry_after_s = pace.retry_after_s(record.awaited_since_ms, now_ms());
    resp.headers_mut()
        .insert(header::RETRY_AFTER, retry_after_s.into());
    resp
}

/// `response` saying which `Prefer: wait` it applied, when the request asked for one.
pub(crate) fn with_preference(
    mut response: Response<Body>,
    applied_wait: Option<Duration>,
) -> Response<Body> {
    if let Some(wait) = applied_wait {
        if let Ok(value) = prefer::applied(wait).parse() {
            response.headers_mut().insert("preference-applied", value);
        }
    }
    response
}

impl<S: AgentStore, K: AgentKit> Resume<S, K> {
    /// The agent's snapshots for a single caller's answer (a keepalive): the record's
    /// summaries (kept current by every wake, sleep and sweep), or when it has none yet, a
    /// listing of the agent's Tool. Never for the answers of a storm's joiners.
    pub(crate) async fn snapshots_for(
        &self,
        record: &AgentRecord,
        home: Option<&Home>,
        deadline: Deadline,
    ) -> Vec<Snapshot> {
        if !record.snapshots.is_empty() {
            return record_snapshots(record);
        }
        let Some(home) = home else {
            return Vec::new();
        };
        snapshots(&self.agentkit, home, &record.key, deadline)
            .await
            .unwrap_or_else(|e| {
                tracing::info!(agent = %record.key, error = %e, "could not list the agent's snapshots for the answer");
                Vec::new()
            })
    }
}
