//! `GET /v1/agents?owner=*` (admins): everyone's agents, a page at a time, from the index.
//!
//! Listing everyone never costs AgentKit calls per agent (docs/operations.md, "The owner
//! index"): a page is read from the agent records alone — every snapwake write (create, wake,
//! sleep, delete) and the retention sweep keep them current with the agent's owner, state,
//! session and its expiry, and snapshot summaries. Each agent says `as_of`: when its record was
//! last written. A page costs no AgentKit call at all, whatever its `limit`.
//!
//! The table is read in its own order (a DynamoDB Scan of the agent records); a page is newest
//! activity first within itself. The opaque `next_cursor` names the last agent of the page
//! (sealed by [`crate::cursor`] and bound to the `kind`/`state` query). Every page but the last
//! holds `limit` agents: records that show nothing (tombstones, agents with neither a live
//! session nor a snapshot, or of another state than asked) are read past.
//!
//! Until a sweep has indexed every snapshot Tool, agents created outside snapwake may have no
//! record yet: such a page says so in `partial`, one entry per Tool not yet covered.

use serde::{Deserialize, Serialize};
use snapwake::ambient::now_ms;
use snapwake::domain::{AgentKey, AgentRecord, AgentState, AgentView, Kind};
use snapwake::domain::{OpenUrl, Retention};
use snapwake::error::{Error, Result};
use snapwake::index_sync::IndexStatus;
use snapwake::lock::LockSettings;
use snapwake::store::AgentStore;
use snapwake::view::AgentFacts;

use crate::cursor::Signer;
use crate::gather::{sort_newest_activity_first, tools_of, view_of, Missing};
use snapwake::domain::ToolRegistry;

/// Where the next page starts (the cursor's sealed content).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    /// The query the cursor belongs to (`kind` and `state` filters).
    #[serde(rename = "q")]
    pub query: String,
    /// The last agent of the previous page.
    #[serde(rename = "a")]
    pub after: AgentKey,
}

/// One page of everyone's agents.
pub struct Page {
    pub agents: Vec<AgentView>,
    pub next_cursor: Option<String>,
    pub missing: Vec<Missing>,
}

pub struct Everyone<'a, S> {
    pub store: &'a S,
    pub registry: &'a ToolRegistry,
    pub settings: &'a LockSettings,
    /// The open link an awake agent's view carries.
    pub open_url: Option<&'a OpenUrl>,
    /// The last completed index sync, if any.
    pub index: Option<&'a IndexStatus>,
    pub signer: Signer,
    pub kinds: Vec<Kind>,
    pub state: Option<AgentState>,
    /// The `kind`/`state` query a cursor is bound to.
    pub query: String,
    pub limit: u32,
}

impl<S: AgentStore> Everyone<'_, S> {
    /// The page at `cursor` (the first when `None`).
    pub async fn page(&self, cursor: Option<&str>) -> Result<Page> {
        let mut after = match cursor {
            None => None,
            Some(c) => {
                let pos: Position = self.signer.open(c)?;
                if pos.query != self.query {
                    return Err(Error::bad_request(
                        "cursor belongs to a query with other kind or state filters",
                    ));
                }
                Some(pos.after)
            }
        };
        let limit = self.limit.max(1) as usize;
        let kind = match self.kinds.as_slice() {
            [one] => Some(*one),
            _ => None,
        };
        let now = now_ms();
        let mut agents: Vec<AgentView> = Vec::new();
        let mut more = false;
        'pages: loop {
            // Read a little more than the page needs: some records show nothing.
            let batch = (limit - agents.len() + 1).max(25) as u32;
            let page = self.store.scan_agents(kind, batch, after.as_ref()).await?;
            let exhausted = page.next.is_none();
            for record in page.records {
                if agents.len() == limit {
                    more = true;
                    break 'pages;
                }
                after = Some(record.key.clone());
                if !self.kinds.contains(&record.key.kind) {
                    continue;
                }
                let Some(view) = index_view(&record, now, self.settings, self.open_url) else {
                    continue;
                };
                if self.state.is_none_or(|s| s == view.state) {
                    agents.push(view);
                }
            }
            if exhausted {
                break;
            }
            if agents.len() == limit {
                // The page is full and the table goes on: the next page may turn out empty,
                // and is then the last.
                more = true;
                break;
            }
        }
        sort_newest_activity_first(&mut agents);
        let next_cursor = match (more, after) {
            (true, Some(after)) => Some(self.signer.seal(&Position {
                query: self.query.clone(),
                after,
            })?),
            _ => None,
        };
        Ok(Page {
            agents,
            next_cursor,
            missing: self.not_indexed(),
        })
    }

    /// The snapshot Tools of the asked kinds no completed sync has covered yet.
    fn not_indexed(&self) -> Vec<Missing> {
        tools_of(self.registry, &self.kinds, false)
            .into_iter()
            .filter(|(_, tool)| self.index.is_none_or(|s| !s.tools.contains(tool)))
            .map(|(kind, tool)| Missing {
                kind,
                tool_id: Some(tool),
                region: None,
                agent_id: None,
                error: "not indexed yet: agents made outside snapwake show after the next \
                        sweep"
                    .into(),
            })
            .collect()
    }
}

/// The view of an agent from its record alone, as of the record's last write (`None`: a list
/// does not show it). The recorded session counts as live while the record says awake (or
/// sleeping: the session ends only once its snapshot is Ready) and its expiry has not passed.
pub fn index_view(
    record: &AgentRecord,
    now_ms: u64,
    settings: &LockSettings,
    open_url: Option<&OpenUrl>,
) -> Option<AgentView> {
    let session: Vec<_> = snapwake::view::recorded_session(record, now_ms)
        .into_iter()
        .collect();
    let snapshots = snapwake::view::record_snapshots(record);
    let facts = AgentFacts {
        key: &record.key,
        record: Some(record),
        sessions: &session,
        snapshots: &snapshots,
        retention: record
            .description
            .retention
            .unwrap_or(Retention::Recoverable),
        open_url,
    };
    let mut view = view_of(&facts, now_ms, settings)?;
    view.as_of = record.updated_at.clone();
    Some(view)
}
