//! The list function: `GET /v1/capabilities`, `GET /v1/agents`, `GET /v1/agents/{kind}/{agent_id}`.
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

pub mod cursor;
pub mod everyone;
pub mod gather;
pub mod owner;

use std::sync::Mutex;
use std::time::Duration;

use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;
use snapwake::agentkit::types::{Session, Snapshot};
use snapwake::agentkit::AgentKit;
use snapwake::deadline::Deadline;
use snapwake::domain::{
    AgentKey, AgentRecord, AgentState, AgentView, Kind, Retention, ToolRegistry, WakeState,
};
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::http::request::{self as req, Route};
use snapwake::http::response;
use snapwake::identity::user_session_id;
use snapwake::identity::IdentityConfig;
use snapwake::identity::{may_act, Caller};
use snapwake::index_sync::{index_status, IndexStatus};
use snapwake::locate::{self, regions};
use snapwake::lock::LockSettings;
use snapwake::registry::RegistryCache;
use snapwake::store::{AgentStore, Within};
use snapwake::timestamp::now_ms;

use crate::cursor::CursorKeys;
use crate::everyone::Everyone;
use crate::gather::{
    list_on_tool, only_of, retention_of, sessions_of_agent, snapshots_of_agent, view_of, Missing,
    AGENT_PAGES,
};
use crate::owner::{Path, MAX_AGENTS};

pub const ROUTES: [Route; 3] = [
    Route {
        method: "GET",
        pattern: "/v1/capabilities",
    },
    Route {
        method: "GET",
        pattern: "/v1/agents",
    },
    Route {
        method: "GET",
        pattern: "/v1/agents/{kind}/{agent_id}",
    },
];

/// The most a list request works, whatever time the Lambda has left.
const LIST_BUDGET: Duration = Duration::from_secs(25);
/// The default and largest page of `owner=*`.
pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 100;

/// The list function's context: ports and settings built once per container.
pub struct List<S, K> {
    pub store: S,
    pub agentkit: K,
    pub registry: RegistryCache,
    pub identity: IdentityConfig,
    /// The lock's timings, to tell a live lease (a wake or delete in flight) in a view.
    pub lock: LockSettings,
    cursor_keys: CursorKeys,
    /// The index sync's completion, once seen.
    index: Mutex<Option<IndexStatus>>,
}

/// A list answer.
#[derive(Serialize)]
struct Listing {
    agents: Vec<AgentView>,
    truncated: bool,
    partial: Vec<Missing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// The parsed query of `GET /v1/agents`.
struct ListQuery {
    kind: Option<Kind>,
    state: Option<AgentState>,
    owner: Option<String>,
    limit: u32,
    cursor: Option<String>,
}

impl<S: AgentStore, K: AgentKit> List<S, K> {
    /// `cursor_key`: `SNAPWAKE_CURSOR_KEY`, else a key kept in the table ([`cursor`]).
    pub fn new(
        store: S,
        agentkit: K,
        registry: RegistryCache,
        identity: IdentityConfig,
        lock: LockSettings,
        cursor_key: Option<String>,
    ) -> Self {
        List {
            store,
            agentkit,
            registry,
            identity,
            lock,
            cursor_keys: CursorKeys::new(cursor_key),
            index: Mutex::new(None),
        }
    }

    /// Serve one request; every failure becomes a problem+json response.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        let request_id = req::request_id(&request);
        edge::answer(self.route(&request).await, request_id.as_deref())
    }

    async fn route(&self, request: &Request) -> Result<Response<Body>> {
        let matched = req::route(&ROUTES, request.method().as_str(), req::path(request))?;
        let caller = Caller::from_request(request, &self.identity)?;
        let deadline = Deadline::for_request(request, LIST_BUDGET);
        // Every store call of the request takes its time from the request's budget.
        let store = Within::new(&self.store, deadline);
        match matched.pattern {
            "/v1/capabilities" => self.capabilities(&store).await,
            "/v1/agents" => self.list(&store, request, &caller, deadline).await,
            _ => {
                let kind = req::parse_kind(&matched.params[0])?;
                let agent_id = req::parse_id(&matched.params[1])?;
                self.one(&store, &caller, AgentKey::new(kind, agent_id), deadline)
                    .await
            }
        }
    }

    async fn capabilities(&self, store: &Within<'_, S>) -> Result<Response<Body>> {
        let registry = self.registry.get(store).await?;
        Ok(response::json(200, &capabilities(&registry)))
    }

    async fn list(
        &self,
        store: &Within<'_, S>,
        request: &Request,
        caller: &Caller,
        deadline: Deadline,
    ) -> Result<Response<Body>> {
        let q = list_query(request)?;
        let kinds: Vec<Kind> = match q.kind {
            Some(k) => vec![k],
            None => Kind::ALL.to_vec(),
        };
        let owner = match q.owner.as_deref() {
            None => caller.owner.clone(),
            Some(o) if o == caller.owner => caller.owner.clone(),
            Some(_) if !caller.is_admin => return Err(Error::AgentNotFound),
            Some("*") => return self.everyone(store, &q, kinds).await,
            Some(o) => o.to_string(),
        };
        if q.cursor.is_some() {
            return Err(Error::bad_request("cursor is only for owner=*"));
        }
        let registry = self.registry.get(store).await?;
        let path = if self.index_trusted(store, &registry, &kinds).await? {
            Path::Index
        } else {
            Path::Scan
        };
        let (collected, more_records) = owner::collect(
            store,
            &self.agentkit,
            &registry,
            &owner,
            &kinds,
            path,
            deadline,
        )
        .await?;
        let mut agents = collected.views(&kinds, q.state, &self.lock);
        let truncated = more_records || agents.len() > MAX_AGENTS;
        agents.truncate(MAX_AGENTS);
        tracing::info!(
            ?path,
            agents = agents.len(),
            partial = collected.missing.len(),
            "listed"
        );
        Ok(response::json(
            200,
            &Listing {
                agents,
                truncated,
                partial: collected.missing,
                next_cursor: None,
            },
        ))
    }

    async fn everyone(
        &self,
        store: &Within<'_, S>,
        q: &ListQuery,
        kinds: Vec<Kind>,
    ) -> Result<Response<Body>> {
        let registry = self.registry.get(store).await?;
        let signer = self.cursor_keys.key(store).await?;
        let index = self.index_status(store).await?;
        let query = format!(
            "{}|{}",
            q.kind.map_or("", Kind::as_str),
            q.state.map(AgentState::as_str).unwrap_or_default()
        );
        let page = Everyone {
            store,
            registry: &registry,
            settings: &self.lock,
            index: index.as_ref(),
            signer,
            kinds,
            state: q.state,
            query,
            limit: q.limit,
        }
        .page(q.cursor.as_deref())
        .await?;
        Ok(response::json(
            200,
            &Listing {
                truncated: page.next_cursor.is_some(),
                agents: page.agents,
                partial: page.missing,
                next_cursor: page.next_cursor,
            },
        ))
    }

    /// Whether the owner index may answer for `kinds`: a completed sync covered their Tools.
    async fn index_trusted(
        &self,
        store: &Within<'_, S>,
        registry: &ToolRegistry,
        kinds: &[Kind],
    ) -> Result<bool> {
        let cached = self.index.lock().ok().and_then(|g| g.clone());
        if cached.as_ref().is_some_and(|s| s.covers(registry, kinds)) {
            return Ok(true);
        }
        Ok(self
            .index_status(store)
            .await?
            .is_some_and(|s| s.covers(registry, kinds)))
    }

    /// The last completed index sync (read, and kept for the warm container's next request:
    /// it only moves forward).
    async fn index_status(&self, store: &Within<'_, S>) -> Result<Option<IndexStatus>> {
        let status = index_status(store).await?;
        if let (Some(s), Ok(mut slot)) = (&status, self.index.lock()) {
            *slot = Some(s.clone());
        }
        Ok(status)
    }

    /// `GET /v1/agents/{kind}/{agent_id}`.
    async fn one(
        &self,
        store: &Within<'_, S>,
        caller: &Caller,
        key: AgentKey,
        deadline: Deadline,
    ) -> Result<Response<Body>> {
        let record = store.get(&key).await?;
        if !may_act(caller, &key, record.as_ref()) {
            return Err(Error::AgentNotFound);
        }
        if record.as_ref().is_some_and(|r| r.state == WakeState::Gone) {
            return Err(Error::AgentGone);
        }
        let registry = self.registry.get(store).await?;
        let (sessions, snapshots, retention) = self
            .find(&registry, &key, record.as_ref(), deadline)
            .await?;
        let view = view_of(
            &key,
            record.as_ref(),
            &sessions,
            &snapshots,
            Some(
                record
                    .as_ref()
                    .and_then(|r| r.retention)
                    .unwrap_or(retention),
            ),
            now_ms(),
            &self.lock,
        )
        .ok_or(Error::AgentNotFound)?;
        let resp = response::json(200, &view);
        Ok(match &record {
            Some(record) => response::with_etag(resp, record),
            None => resp,
        })
    }

    /// One agent's sessions and snapshots: on its recorded Tool, else on the first of its
    /// kind's Tools that has either. Failures are errors here (one agent, nothing to be partial
    /// about).
    async fn find(
        &self,
        registry: &ToolRegistry,
        key: &AgentKey,
        record: Option<&AgentRecord>,
        deadline: Deadline,
    ) -> Result<(Vec<Session>, Vec<Snapshot>, Retention)> {
        let Some(usid) = user_session_id(&key.agent_id) else {
            // `snapshot-<id>`: found only by listing its Tool; it has no sessions.
            return Ok(
                match locate::locate(&self.agentkit, registry, key, deadline).await? {
                    Some(found) => (Vec::new(), found.snapshots, Retention::Recoverable),
                    None => (Vec::new(), Vec::new(), Retention::Recoverable),
                },
            );
        };
        let all: Vec<String> = regions(registry, &self.agentkit)
            .into_iter()
            .map(str::to_string)
            .collect();
        let recorded = record.and_then(|r| r.tool_id.clone());
        let mut tools: Vec<String> = recorded.iter().cloned().collect();
        if let Some(k) = registry.kind(key.kind) {
            tools.extend(
                k.all_tools()
                    .map(str::to_string)
                    .filter(|t| Some(t) != recorded.as_ref()),
            );
        }
        for tool in tools {
            let hint = record
                .filter(|r| r.tool_id.as_ref() == Some(&tool))
                .and_then(|r| r.region.clone());
            let mut order: Vec<String> = hint.iter().cloned().collect();
            order.extend(all.iter().filter(|r| Some(*r) != hint.as_ref()).cloned());
            let sessions = match list_on_tool(
                &self.agentkit,
                &order,
                sessions_of_agent(&tool, usid),
                AGENT_PAGES,
                deadline,
            )
            .await
            {
                Ok((region, s)) => (region, only_of(s, usid, |s| s.user_session_id.as_deref())),
                Err((_, e)) if e.is_not_found() => continue,
                Err((_, e)) => return Err(e.into()),
            };
            let (region, sessions) = sessions;
            let snapshots = if registry.is_snapshot_tool(key.kind, &tool) {
                let all = snapwake::agentkit::list_all(
                    &self.agentkit,
                    &region,
                    snapshots_of_agent(&tool, usid),
                    AGENT_PAGES,
                    deadline,
                )
                .await?;
                only_of(all, usid, |s| s.user_session_id.as_deref())
            } else {
                Vec::new()
            };
            if !sessions.is_empty() || !snapshots.is_empty() {
                return Ok((sessions, snapshots, retention_of(registry, key.kind, &tool)));
            }
        }
        Ok((Vec::new(), Vec::new(), Retention::Recoverable))
    }
}

/// Whether `caller` may see `key`: admins always; others when the record names them as owner
/// or the UserSessionId is theirs. `snapshot-<id>` agents and older ids are admin-only.
fn list_query(request: &Request) -> Result<ListQuery> {
    let params = request.query_string_parameters();
    let get = |name: &str| params.first(name).map(str::to_string);
    let kind = get("kind").map(|k| req::parse_kind(&k)).transpose()?;
    let state = get("state")
        .map(|s| s.parse::<AgentState>().map_err(Error::bad_request))
        .transpose()?;
    let owner = get("owner").filter(|o| !o.trim().is_empty());
    let limit = match get("limit") {
        None => DEFAULT_LIMIT,
        Some(l) => match l.parse::<u32>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(Error::bad_request(
                    "limit must be a whole number from 1 to 100",
                ))
            }
        },
    };
    let cursor = get("cursor").filter(|c| !c.is_empty());
    Ok(ListQuery {
        kind,
        state,
        owner,
        limit,
        cursor,
    })
}

/// The capabilities document (http-api.md).
pub fn capabilities(registry: &ToolRegistry) -> serde_json::Value {
    let kinds: Vec<serde_json::Value> = Kind::ALL
        .into_iter()
        .map(|kind| {
            let one = |retention: Retention| match registry.tool(kind, retention) {
                Some(_) => serde_json::json!({"enabled": true}),
                None => serde_json::json!({
                    "enabled": false,
                    "reason": format!("no {retention} Tool is deployed"),
                }),
            };
            let default = if registry.tool(kind, Retention::Recoverable).is_some() {
                Retention::Recoverable
            } else {
                Retention::Temporary
            };
            serde_json::json!({
                "kind": kind,
                "default_retention": default,
                "retention": {
                    "temporary": one(Retention::Temporary),
                    "recoverable": one(Retention::Recoverable),
                },
            })
        })
        .collect();
    serde_json::json!({ "kinds": kinds })
}
