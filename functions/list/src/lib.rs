//! The list function: `GET /v1/capabilities`, `GET /v1/agents`, `GET /v1/agents/{kind}/{agent_id}`,
//! and `GET /v1/usage` (what agents were awake and what it saved, docs/usage.md: `usage.rs`).
//!
//! - **capabilities**: per kind, whether each retention is enabled (a Tool of it is in the
//!   registry) and why not, and the default retention (recoverable when enabled).
//! - **list** `?kind=&state=&owner=&limit=&cursor=` →
//!   `{"agents": [...], "truncated": bool, "partial": [...]}` (plus `next_cursor` for
//!   `owner=*`), newest activity first, at most 1000. `partial` is always present: each entry
//!   `{"tool_id", "region"?, "agent_id"?, "error"}` names a Tool (or one agent on it) that could
//!   not be read, so an empty array means the answer is complete. One owner's agents come from
//!   the owner index once a full index sync has covered the Tools asked about, else from a
//!   scan (see [`owner`]); `owner=*` (admins) pages everyone (see [`everyone`]).
//! - **one agent**: its view with an `ETag` (the record's version, when it has a record);
//!   another owner's agent answers 404 exactly like a missing one; a deleted one 410.
//!
//! Choices where the specification is silent:
//! - `owner` naming someone else (or `*`) from a non-admin answers **404** (`AGENT_NOT_FOUND`):
//!   other owners do not exist for them, as their agents do not. `owner=<themselves>` is fine.
//! - `cursor` without `owner=*` is a 400; `limit` is validated (1–100) wherever given but only
//!   pages `owner=*`.
//! - A list shows an agent that has a live session, a snapshot, or a wake or delete in flight;
//!   a record with nothing left in AgentKit (a temporary agent whose session ended) is not
//!   listed, and its single GET is a 404.
//! - "Activity" is the later of the live session's start and the newest snapshot.
//! - A warm container caches the registry (60 s) and, once seen, the index sync's completion
//!   (it only ever moves forward), so a warm list of one owner costs exactly the two owner-index
//!   queries in DynamoDB.
//!
//! Files: `lib.rs` (this: the function and its routes), `query.rs` (the list query),
//! `capabilities.rs`, `agents.rs` (`GET /v1/agents`), `one.rs` (one agent), `owner.rs` (one
//! owner's agents: index or scan), `everyone.rs` (`owner=*` pages), `gather.rs` (reading
//! Tools and building views), `cursor.rs` (sealed page cursors).

mod agents;
mod capabilities;
mod cursor;
mod everyone;
mod gather;
mod one;
mod owner;
mod query;
mod usage;

use std::sync::Mutex;
use std::time::Duration;

use lambda_http::{Body, Request, Response};
use snapwake::agentkit::types::Secret;
use snapwake::agentkit::AgentKit;
use snapwake::domain::AgentKey;
use snapwake::domain::OpenUrl;
use snapwake::error::Result;
use snapwake::http::edge;
use snapwake::http::edge::Route;
use snapwake::identity::{Caller, IdentityConfig};
use snapwake::index_sync::IndexStatus;
use snapwake::invocation::Deadline;
use snapwake::locate::RegistryCache;
use snapwake::lock::LockSettings;
use snapwake::store::{AgentStore, UsageStore, Within};
use snapwake::usage::report::Prices;

use crate::cursor::CursorKeys;

/// The function's logical id in `infra/template.yaml`: its AWS calls are checked against that
/// function's policy (`snapwake::aws_calls`).
pub const FUNCTION: &str = "ListFunction";

pub const ROUTES: [Route; 4] = [
    Route::new("GET", "/v1/capabilities"),
    Route::new("GET", "/v1/agents"),
    Route::new("GET", "/v1/agents/{kind}/{agent_id}"),
    Route::new("GET", "/v1/usage"),
];

/// The most a list request works, whatever time the Lambda has left.
const LIST_BUDGET: Duration = Duration::from_secs(25);

/// Settings of the list function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListSettings {
    /// The lock's timings, to tell a live lease (a wake or delete in flight) in a view.
    pub lock: LockSettings,
    /// The key that seals `owner=*` cursors (`SNAPWAKE_CURSOR_KEY`); `None`: a key kept in the
    /// table, made on first use.
    pub cursor_key: Option<Secret>,
    /// The deployment's open link (`SNAPWAKE_OPEN_URL`), which an awake agent's view carries.
    pub open_url: Option<OpenUrl>,
    /// Prices for the usage report (`SNAPWAKE_PRICES`, docs/usage.md).
    pub prices: Option<Prices>,
}

/// The list function's context: ports and settings built once per container.
pub struct List<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    lock: LockSettings,
    open_url: Option<OpenUrl>,
    prices: Option<Prices>,
    cursor_keys: CursorKeys,
    /// The index sync's completion, once seen.
    index: Mutex<Option<IndexStatus>>,
    /// The refresh's marks and when they were read: `as_of` may be a few seconds older than
    /// the index is (never newer), for one read less per list.
    freshness: Mutex<Option<(tokio::time::Instant, snapwake::index_sync::Freshness)>>,
}

impl<S: AgentStore + UsageStore, K: AgentKit> List<S, K> {
    pub fn new(
        store: S,
        agentkit: K,
        registry: RegistryCache,
        identity: IdentityConfig,
        settings: ListSettings,
    ) -> Self {
        List {
            store,
            agentkit,
            registry,
            identity,
            lock: settings.lock,
            open_url: settings.open_url,
            prices: settings.prices,
            cursor_keys: CursorKeys::new(settings.cursor_key),
            index: Mutex::new(None),
            freshness: Mutex::new(None),
        }
    }

    /// Serve one request, in its invocation's span; every failure becomes a problem+json
    /// response.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        snapwake::invocation::Invocation::http(FUNCTION)
            .run(edge::serve(&request, self.route(&request)))
            .await
    }

    async fn route(&self, request: &Request) -> Result<Response<Body>> {
        let matched = edge::route(&ROUTES, request.method().as_str(), edge::path(request))?;
        let caller = Caller::from_request(request, &self.identity)?;
        let deadline = Deadline::for_request(request, LIST_BUDGET);
        // Every store call of the request takes its time from the request's budget.
        let store = Within::new(&self.store, deadline);
        match matched.pattern {
            "/v1/capabilities" => self.capabilities(&store).await,
            "/v1/agents" => self.list(&store, request, &caller, deadline).await,
            "/v1/usage" => self.usage(&store, request, &caller).await,
            _ => {
                let kind = edge::parse_kind(&matched.params[0])?;
                let agent_id = edge::parse_id(&matched.params[1])?;
                self.one(&store, &caller, AgentKey::new(kind, agent_id), deadline)
                    .await
            }
        }
    }
}
