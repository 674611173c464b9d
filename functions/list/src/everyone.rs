//! `GET /v1/agents?owner=*` (admins): every agent, paged by a scan of AgentKit.
//!
//! The scan walks steps in a fixed order: first the snapshots of every snapshot Tool, then the
//! sessions of every Tool (for agents that have no snapshot: awake temporary agents, agents
//! that never slept). One request reads one AgentKit page of `limit` items (more only while a
//! page yielded nothing), and its `next_cursor` names the step, the region and AgentKit's
//! NextToken, sealed by [`crate::cursor`].
//!
//! Every agent appears on exactly one page, however its snapshots or sessions are spread over
//! AgentKit's pages: an agent seen on a page is looked up exactly (all its snapshots, all its
//! sessions on that Tool) and shown only on the page that holds its *representative* — the
//! smallest SnapshotId among its snapshots, or for agents without snapshots the smallest
//! SessionId among its live sessions. The exact lookups also make each view complete.
//!
//! A page is newest activity first within itself; pages follow the scan order. A Tool that
//! cannot be read is skipped with a `partial` entry (the admin sees what is missing), so one
//! broken Tool never blocks the pages after it. `state` is applied to each page, so pages may
//! hold fewer than `limit` agents; only a missing `next_cursor` means the end.

use std::collections::BTreeMap;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use snapwake::agentkit::types::{Action, ListSessionSnapshots, ListSessions, Session, Snapshot};
use snapwake::agentkit::{list_all, AgentKit, AgentKitError};
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, AgentState, AgentView, Kind, Retention, ToolRegistry};
use snapwake::error::{Error, Result};
use snapwake::index_sync::agent_of;
use snapwake::locate::{regions, user_session_id};
use snapwake::lock::LockSettings;
use snapwake::store::{now_ms, AgentStore};

use crate::cursor::Signer;
use crate::gather::{
    only_of, retention_of, sessions_of_agent, snapshots_of_agent, sort_newest_activity_first,
    tools_of, view_of, Missing, AGENT_PAGES,
};
use crate::owner::AGENT_CONCURRENCY;

/// Which listing a step reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    #[serde(rename = "s")]
    Snapshots,
    #[serde(rename = "l")]
    Sessions,
}

/// Where the next page starts (the cursor's sealed content).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    /// The query the cursor belongs to (`kind` and `state` filters).
    #[serde(rename = "q")]
    pub query: String,
    #[serde(rename = "p")]
    pub phase: Phase,
    #[serde(rename = "k")]
    pub kind: Kind,
    #[serde(rename = "t")]
    pub tool: String,
    /// The region that knows the Tool, once found.
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// AgentKit's NextToken within the step.
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// One page of everyone's agents.
pub struct Page {
    pub agents: Vec<AgentView>,
    pub next_cursor: Option<String>,
    pub missing: Vec<Missing>,
}

/// The scan's steps for `kinds`.
fn steps(registry: &ToolRegistry, kinds: &[Kind]) -> Vec<(Phase, Kind, String)> {
    let snapshots = tools_of(registry, kinds, false)
        .into_iter()
        .map(|(k, t)| (Phase::Snapshots, k, t));
    let sessions = tools_of(registry, kinds, true)
        .into_iter()
        .map(|(k, t)| (Phase::Sessions, k, t));
    snapshots.chain(sessions).collect()
}

pub struct Everyone<'a, S, K> {
    pub store: &'a S,
    pub agentkit: &'a K,
    pub registry: &'a ToolRegistry,
    pub settings: &'a LockSettings,
    pub signer: Signer,
    pub kinds: Vec<Kind>,
    pub state: Option<AgentState>,
    /// The `kind`/`state` query a cursor is bound to.
    pub query: String,
    pub limit: u32,
    pub deadline: Deadline,
}

impl<S: AgentStore, K: AgentKit> Everyone<'_, S, K> {
    /// The page at `cursor` (the first when `None`).
    pub async fn page(&self, cursor: Option<&str>) -> Result<Page> {
        let steps = steps(self.registry, &self.kinds);
        let mut at = match cursor {
            None => steps.first().map(|(p, k, t)| self.start(*p, *k, t)),
            Some(c) => {
                let pos: Position = self.signer.open(c)?;
                if pos.query != self.query {
                    return Err(Error::bad_request(
                        "cursor belongs to a query with other kind or state filters",
                    ));
                }
                if !steps
                    .iter()
                    .any(|(p, k, t)| (*p, *k, t) == (pos.phase, pos.kind, &pos.tool))
                {
                    return Err(Error::bad_request(
                        "cursor no longer matches the deployed Tools; start again",
                    ));
                }
                Some(pos)
            }
        };
        let mut agents = Vec::new();
        let mut missing = Vec::new();
        while let Some(pos) = at.take() {
            if !agents.is_empty() || self.deadline.remaining() < std::time::Duration::from_secs(3) {
                at = Some(pos);
                break;
            }
            match self.read(&pos).await {
                Ok((mut views, next, mut lost)) => {
                    agents.append(&mut views);
                    missing.append(&mut lost);
                    at = next.or_else(|| self.after(&steps, &pos));
                }
                Err(m) => {
                    missing.push(m);
                    at = self.after(&steps, &pos);
                }
            }
        }
        sort_newest_activity_first(&mut agents);
        let next_cursor = at.map(|p| self.signer.seal(&p)).transpose()?;
        Ok(Page {
            agents,
            next_cursor,
            missing,
        })
    }

    fn start(&self, phase: Phase, kind: Kind, tool: &str) -> Position {
        Position {
            query: self.query.clone(),
            phase,
            kind,
            tool: tool.to_string(),
            region: None,
            token: None,
        }
    }

    /// The first position of the step after `pos`'s.
    fn after(&self, steps: &[(Phase, Kind, String)], pos: &Position) -> Option<Position> {
        let i = steps
            .iter()
            .position(|(p, k, t)| (*p, *k, t) == (pos.phase, pos.kind, &pos.tool))?;
        steps.get(i + 1).map(|(p, k, t)| self.start(*p, *k, t))
    }

    /// One AgentKit page at `pos`: its views, where the step goes on (`None`: it is over),
    /// and what could not be read. An error reading the page itself skips the step.
    async fn read(
        &self,
        pos: &Position,
    ) -> std::result::Result<(Vec<AgentView>, Option<Position>, Vec<Missing>), Missing> {
        let regions: Vec<String> = match &pos.region {
            Some(r) => vec![r.clone()],
            None => regions(self.registry, self.agentkit)
                .into_iter()
                .map(str::to_string)
                .collect(),
        };
        let mut last = None;
        for region in &regions {
            let answer = match pos.phase {
                Phase::Snapshots => {
                    let request = ListSessionSnapshots {
                        tool_id: pos.tool.clone(),
                        max_results: Some(self.limit),
                        next_token: pos.token.clone(),
                        ..ListSessionSnapshots::default()
                    };
                    match self.agentkit.call(region, &request, self.deadline).await {
                        Ok(out) => {
                            let (views, lost) =
                                self.snapshot_page(pos, region, out.snapshots).await;
                            Ok((views, out.next_token, lost))
                        }
                        Err(e) => Err(e),
                    }
                }
                Phase::Sessions => {
                    let request = ListSessions {
                        tool_id: pos.tool.clone(),
                        max_results: Some(self.limit),
                        next_token: pos.token.clone(),
                        ..ListSessions::default()
                    };
                    match self.agentkit.call(region, &request, self.deadline).await {
                        Ok(out) => {
                            let (views, lost) =
                                self.session_page(pos, region, out.session_infos).await;
                            Ok((views, out.next_token, lost))
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            match answer {
                Ok((views, token, lost)) => {
                    let next = token.filter(|t| !t.is_empty()).map(|t| Position {
                        region: Some(region.clone()),
                        token: Some(t),
                        ..pos.clone()
                    });
                    return Ok((views, next, lost));
                }
                Err(e) if e.is_not_found() && pos.region.is_none() => last = Some(e),
                Err(e) => return Err(Missing::new(&pos.tool, Some(region), &e)),
            }
        }
        let e = last.unwrap_or(AgentKitError::NotFound {
            action: ListSessions::NAME,
            message: "no region configured".into(),
        });
        Err(Missing::new(&pos.tool, None, &e))
    }

    /// The agents whose representative snapshot is on this page.
    async fn snapshot_page(
        &self,
        pos: &Position,
        region: &str,
        page: Vec<Snapshot>,
    ) -> (Vec<AgentView>, Vec<Missing>) {
        let on_page: Vec<&str> = page
            .iter()
            .filter_map(|s| s.snapshot_id.as_deref())
            .collect();
        let mut agents: BTreeMap<AgentKey, Vec<Snapshot>> = BTreeMap::new();
        for s in &page {
            if let Some(key) = agent_of(pos.kind, s) {
                agents.entry(key).or_default().push(s.clone());
            }
        }
        let looked_up = futures::stream::iter(agents)
            .map(|(key, seen)| async move {
                let Some(usid) = user_session_id(&key.agent_id).map(str::to_string) else {
                    // A snapshot without a UserSessionId is an agent of its own.
                    return (key, Ok((seen, Vec::new())));
                };
                let found = self.agent_on_tool(&pos.tool, region, &usid).await;
                (key, found)
            })
            .buffer_unordered(AGENT_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        let mut shown = Vec::new();
        let mut missing = Vec::new();
        for (key, found) in looked_up {
            match found {
                Ok((snapshots, sessions)) => {
                    let representative = snapshots
                        .iter()
                        .filter_map(|s| s.snapshot_id.as_deref())
                        .min();
                    if representative.is_some_and(|r| on_page.contains(&r)) {
                        shown.push((key, snapshots, sessions, Retention::Recoverable));
                    }
                }
                Err(e) => {
                    missing.push(Missing::new(&pos.tool, Some(region), &e).agent(&key.agent_id))
                }
            }
        }
        (self.views(shown).await, missing)
    }

    /// The agents without snapshots whose representative live session is on this page.
    async fn session_page(
        &self,
        pos: &Position,
        region: &str,
        page: Vec<Session>,
    ) -> (Vec<AgentView>, Vec<Missing>) {
        let on_page: Vec<&str> = page
            .iter()
            .filter(|s| s.is_active())
            .filter_map(|s| s.session_id.as_deref())
            .collect();
        let mut usids: Vec<String> = page
            .iter()
            .filter(|s| s.is_active())
            .filter_map(|s| s.user_session_id.clone())
            .filter(|u| user_session_id(u).is_some())
            .collect();
        usids.sort_unstable();
        usids.dedup();
        let snapshot_tool = self.registry.is_snapshot_tool(pos.kind, &pos.tool);
        let looked_up = futures::stream::iter(usids)
            .map(|usid| async move {
                let found = self.agent_on_tool(&pos.tool, region, &usid).await;
                (usid, found)
            })
            .buffer_unordered(AGENT_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        let retention = retention_of(self.registry, pos.kind, &pos.tool);
        let mut shown = Vec::new();
        let mut missing = Vec::new();
        for (usid, found) in looked_up {
            match found {
                // Agents with snapshots here were shown by the snapshot phase.
                Ok((snapshots, _)) if snapshot_tool && !snapshots.is_empty() => {}
                Ok((snapshots, sessions)) => {
                    let representative = sessions
                        .iter()
                        .filter(|s| s.is_active())
                        .filter_map(|s| s.session_id.as_deref())
                        .min();
                    if representative.is_some_and(|r| on_page.contains(&r)) {
                        shown.push((
                            AgentKey::new(pos.kind, usid.as_str()),
                            snapshots,
                            sessions,
                            retention,
                        ));
                    }
                }
                Err(e) => missing.push(Missing::new(&pos.tool, Some(region), &e).agent(&usid)),
            }
        }
        (self.views(shown).await, missing)
    }

    /// All of one agent's snapshots (on a snapshot Tool) and sessions on `tool`.
    async fn agent_on_tool(
        &self,
        tool: &str,
        region: &str,
        usid: &str,
    ) -> std::result::Result<(Vec<Snapshot>, Vec<Session>), AgentKitError> {
        let snapshots = if tool_holds_snapshots(self.registry, tool) {
            let all = list_all(
                self.agentkit,
                region,
                snapshots_of_agent(tool, usid),
                AGENT_PAGES,
                self.deadline,
            )
            .await?;
            only_of(all, usid, |s| s.user_session_id.as_deref())
        } else {
            Vec::new()
        };
        let sessions = list_all(
            self.agentkit,
            region,
            sessions_of_agent(tool, usid),
            AGENT_PAGES,
            self.deadline,
        )
        .await?;
        Ok((
            snapshots,
            only_of(sessions, usid, |s| s.user_session_id.as_deref()),
        ))
    }

    /// Views of the agents to show, with their records (one read each).
    async fn views(
        &self,
        shown: Vec<(AgentKey, Vec<Snapshot>, Vec<Session>, Retention)>,
    ) -> Vec<AgentView> {
        let now = now_ms();
        let views: Vec<Option<AgentView>> = futures::stream::iter(shown)
            .map(|(key, snapshots, sessions, retention)| async move {
                // A record that cannot be read leaves the view without it (no wake state)
                // rather than failing the page.
                let record = self.store.get(&key).await.ok().flatten();
                view_of(
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
                    now,
                    self.settings,
                )
            })
            .buffer_unordered(AGENT_CONCURRENCY)
            .collect()
            .await;
        views
            .into_iter()
            .flatten()
            .filter(|v| self.state.is_none_or(|s| s == v.state))
            .collect()
    }
}

/// Whether `tool` is a snapshot Tool of any kind.
fn tool_holds_snapshots(registry: &ToolRegistry, tool: &str) -> bool {
    Kind::ALL
        .into_iter()
        .any(|k| registry.is_snapshot_tool(k, tool))
}
