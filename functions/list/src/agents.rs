//! `GET /v1/agents`: one owner's agents (from the owner index once a sync covered their Tools,
//! else a scan: [`crate::owner`]), or, for admins, everyone's in pages ([`crate::everyone`]).

use lambda_http::{Body, Request, Response};
use serde::Serialize;
use snapwake::agentkit::AgentKit;
use snapwake::domain::{AgentState, AgentView, Kind, ToolRegistry};
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::identity::Caller;
use snapwake::index_sync::{index_status, IndexStatus};
use snapwake::invocation::Deadline;
use snapwake::store::{AgentStore, Within};

use crate::everyone::Everyone;
use crate::gather::Missing;
use crate::owner::{self, Path, MAX_AGENTS};
use crate::query::{list_query, ListQuery};
use crate::List;

/// How long a container keeps the refresh's marks before reading them again.
const MARKS_KEPT: std::time::Duration = std::time::Duration::from_secs(15);

/// A list answer.
#[derive(Serialize)]
struct Listing {
    agents: Vec<AgentView>,
    truncated: bool,
    partial: Vec<Missing>,
    /// How fresh the snapshots shown are: when the index they come from last read every
    /// snapshot Tool asked about (RFC 3339); a scan is live (now).
    #[serde(skip_serializing_if = "Option::is_none")]
    as_of: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

impl<S: AgentStore, K: AgentKit> List<S, K> {
    pub(crate) async fn list(
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
        let as_of = match path {
            Path::Index => self.as_of(store, &registry, &kinds).await?,
            Path::Scan => Some(snapwake::ambient::now_ms()),
        };
        let mut agents = collected.views(&kinds, q.state, &self.lock, self.open_url.as_ref());
        for view in &mut agents {
            snapwake::view::seen_by_owner(view, &owner);
        }
        let truncated = more_records || agents.len() > MAX_AGENTS;
        agents.truncate(MAX_AGENTS);
        tracing::info!(
            ?path,
            agents = agents.len(),
            partial = collected.missing.len(),
            "listed"
        );
        Ok(edge::json(
            200,
            &Listing {
                agents,
                truncated,
                partial: collected
                    .missing
                    .into_iter()
                    .map(|m| m.shown_to(caller))
                    .collect(),
                as_of: as_of.map(snapwake::ambient::format_ms),
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
        let as_of = self.as_of(store, &registry, &kinds).await?;
        let query = format!(
            "{}|{}",
            q.kind.map_or("", Kind::as_str),
            q.state.map(AgentState::as_str).unwrap_or_default()
        );
        let page = Everyone {
            store,
            registry: &registry,
            settings: &self.lock,
            open_url: self.open_url.as_ref(),
            index: index.as_ref(),
            signer,
            kinds,
            state: q.state,
            query,
            limit: q.limit,
        }
        .page(q.cursor.as_deref())
        .await?;
        Ok(edge::json(
            200,
            &Listing {
                truncated: page.next_cursor.is_some(),
                agents: page.agents,
                partial: page.missing,
                as_of: as_of.map(snapwake::ambient::format_ms),
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

    /// When the index last read every snapshot Tool of `kinds` (epoch ms; `None` before the
    /// first completed sync).
    async fn as_of(
        &self,
        store: &Within<'_, S>,
        registry: &ToolRegistry,
        kinds: &[Kind],
    ) -> Result<Option<u64>> {
        let cached = self.index.lock().ok().and_then(|g| g.clone());
        let status = match cached {
            Some(s) => s,
            None => match self.index_status(store).await? {
                Some(s) => s,
                None => return Ok(None),
            },
        };
        let marks = self.marks(store).await?;
        let tools = kinds
            .iter()
            .filter_map(|k| registry.kind(*k))
            .flat_map(|t| t.snapshot_tools());
        Ok(Some(marks.as_of(&status, tools)))
    }

    /// The refresh's marks, read again once [`MARKS_KEPT`] has passed (the refresh runs once
    /// a minute: a warm container's lists cost one read less).
    async fn marks(&self, store: &Within<'_, S>) -> Result<snapwake::index_sync::Freshness> {
        let cached = self.freshness.lock().ok().and_then(|g| g.clone());
        if let Some((_, marks)) = cached.filter(|(at, _)| at.elapsed() < MARKS_KEPT) {
            return Ok(marks);
        }
        let (marks, _) = snapwake::index_sync::freshness(store).await?;
        if let Ok(mut slot) = self.freshness.lock() {
            *slot = Some((tokio::time::Instant::now(), marks.clone()));
        }
        Ok(marks)
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
}
