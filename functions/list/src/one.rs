//! `GET /v1/agents/{kind}/{agent_id}`: one agent's view with its `ETag`; another owner's agent
//! answers 404 exactly like a missing one, a deleted one 410.

use lambda_http::{Body, Response};
use snapwake::agentkit::types::{Session, Snapshot};
use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::domain::{AgentKey, AgentRecord, Retention, ToolRegistry, WakeState};
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::identity::{may_act, user_session_id, Caller};
use snapwake::invocation::Deadline;
use snapwake::locate::{self, regions};
use snapwake::store::{AgentStore, Within};
use snapwake::view::AgentFacts;

use crate::gather::{
    list_on_tool, only_of, retention_of, sessions_of_agent, snapshots_of_agent, view_of,
    AGENT_PAGES,
};
use crate::List;

impl<S: AgentStore, K: AgentKit> List<S, K> {
    /// `GET /v1/agents/{kind}/{agent_id}`.
    pub(crate) async fn one(
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
        let facts = AgentFacts {
            key: &key,
            record: record.as_ref(),
            sessions: &sessions,
            snapshots: &snapshots,
            retention: record
                .as_ref()
                .and_then(|r| r.description.retention)
                .unwrap_or(retention),
            open_url: self.open_url.as_ref(),
        };
        let mut view = view_of(&facts, now_ms(), &self.lock).ok_or(Error::AgentNotFound)?;
        snapwake::view::seen_by_owner(&mut view, &caller.owner);
        let resp = edge::json(200, &view);
        Ok(match &record {
            Some(record) => edge::with_etag(resp, record),
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
        let recorded = record.and_then(|r| r.description.tool_id.clone());
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
                .filter(|r| r.description.tool_id.as_ref() == Some(&tool))
                .and_then(|r| r.description.region.clone());
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
