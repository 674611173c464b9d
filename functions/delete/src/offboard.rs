//! Offboarding (docs/operations.md, "Offboarding"): an EventBridge event `detail-type:
//! "snapwake.owner.offboarded"`, `detail: {"owner"}`, or `snapwake offboard OWNER`, deletes
//! every agent of that owner exactly as `DELETE /v1/agents/{kind}/{agent_id}` does — session
//! ended, snapshots deleted, tombstone written.
//!
//! The owner's agents are found three ways, so none is missed: the owner index (both owner
//! keys, every page), every snapshot of every snapshot Tool whose UserSessionId is the
//! owner's, and every live session of every Tool whose UserSessionId is the owner's (metadata
//! is free text; the id's prefix is the proof, as everywhere). An agent held by a wake or a
//! delete is tried again after its `Retry-After`, within the invocation's time.
//!
//! Events arrive at least once: an agent already tombstoned counts as done, so a redelivered
//! event finds nothing left and succeeds. An agent that could not be deleted makes the run an
//! error, so EventBridge (or the operator) runs it again.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use snapwake::agentkit::AgentKit;
use snapwake::deadline::Deadline;
use snapwake::domain::{AgentKey, AgentRecord, Retention, ToolRegistry, WakeState};
use snapwake::error::Error;
use snapwake::identity::user_session_id;
use snapwake::identity::{belongs_to, owner_keys};
use snapwake::index_sync::{agents_of, list_tool, tools};
use snapwake::locate::regions;
use snapwake::store::AgentStore;

use crate::deletion::{AgentPlace, DeleteTarget, Deleted, Deleter};
use crate::DeleteSettings;

/// Owner-index pages read per owner key.
const INDEX_PAGES: usize = 50;
/// How many times an agent held by someone else is tried.
const BUSY_ROUNDS: usize = 4;

/// What happened to one agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Deleted,
    /// A tombstone was there already.
    AlreadyGone,
    /// A dry run: it would be deleted.
    WouldDelete,
    Failed,
}

/// What an offboarding did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OffboardReport {
    pub owner: String,
    /// Agents of the owner found (tombstones included).
    pub found: usize,
    pub deleted: usize,
    pub already_gone: usize,
    pub failed: usize,
    pub dry_run: bool,
    /// Every agent and what happened to it.
    pub agents: Vec<(AgentKey, Outcome)>,
    pub duration_ms: u64,
}

/// What offboarding reports as it goes.
pub trait OffboardProgress: Sync {
    fn found(&self, _agents: usize) {}
    fn agent(&self, _key: &AgentKey, _outcome: Outcome) {}
}

/// One offboarding of one owner.
pub struct Offboard<'a, S, K> {
    pub store: &'a S,
    pub agentkit: &'a K,
    pub registry: &'a ToolRegistry,
    pub delete: &'a DeleteSettings,
    pub progress: &'a dyn OffboardProgress,
}

/// Where an agent was found in AgentKit: its Tool and region.
#[derive(Clone, Debug, Default)]
struct Found {
    record: Option<AgentRecord>,
    home: Option<(String, String, Retention)>,
}

impl<S: AgentStore, K: AgentKit> Offboard<'_, S, K> {
    pub async fn run(
        &self,
        owner: &str,
        deadline: Deadline,
        dry_run: bool,
    ) -> Result<OffboardReport, Error> {
        let started = std::time::Instant::now();
        if owner.trim().is_empty() {
            return Err(Error::bad_request("offboarding needs an owner"));
        }
        let agents = self.find(owner, deadline).await?;
        self.progress.found(agents.len());
        let mut report = OffboardReport {
            owner: owner.to_string(),
            found: agents.len(),
            dry_run,
            ..OffboardReport::default()
        };
        for (key, found) in agents {
            let outcome = if found
                .record
                .as_ref()
                .is_some_and(|r| r.state == WakeState::Gone)
            {
                Outcome::AlreadyGone
            } else if dry_run {
                Outcome::WouldDelete
            } else {
                self.delete(&key, found, deadline).await
            };
            match outcome {
                Outcome::Deleted => report.deleted += 1,
                Outcome::AlreadyGone => report.already_gone += 1,
                Outcome::Failed => report.failed += 1,
                Outcome::WouldDelete => {}
            }
            self.progress.agent(&key, outcome);
            report.agents.push((key, outcome));
        }
        report.duration_ms = started.elapsed().as_millis() as u64;
        tracing::info!(
            owner = %report.owner,
            found = report.found,
            deleted = report.deleted,
            already_gone = report.already_gone,
            failed = report.failed,
            dry_run,
            "offboarding"
        );
        Ok(report)
    }

    /// Every agent of `owner`: in the owner index, in the snapshot Tools, in the live sessions.
    async fn find(
        &self,
        owner: &str,
        deadline: Deadline,
    ) -> Result<BTreeMap<AgentKey, Found>, Error> {
        let mut agents: BTreeMap<AgentKey, Found> = BTreeMap::new();
        for owner_key in owner_keys(owner) {
            let mut cursor: Option<String> = None;
            for _ in 0..INDEX_PAGES {
                let page = self
                    .store
                    .query_owner(&owner_key, 1000, cursor.as_deref())
                    .await?;
                for record in page.records {
                    // The index says whose it is, the UserSessionId proves it.
                    let ours = user_session_id(&record.key.agent_id)
                        .is_some_and(|id| belongs_to(id, owner));
                    if ours {
                        let key = record.key.clone();
                        agents.entry(key).or_default().record = Some(record);
                    }
                }
                match page.cursor {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
        }
        for (kind, tool, retention) in tools(self.registry) {
            let listing = match list_tool(
                self.agentkit,
                self.registry,
                (kind, &tool, retention),
                deadline,
            )
            .await
            {
                Ok(l) => l,
                Err(e) if e.is_not_found() => continue,
                // A Tool that cannot be read could hide an agent: not done, try again.
                Err(e) => return Err(e.into()),
            };
            for key in agents_of(&listing).into_keys() {
                let ours = user_session_id(&key.agent_id).is_some_and(|id| belongs_to(id, owner));
                if ours {
                    let found = agents.entry(key).or_default();
                    found.home.get_or_insert((
                        listing.tool_id.clone(),
                        listing.region.clone(),
                        listing.retention,
                    ));
                }
            }
        }
        Ok(agents)
    }

    /// Delete one agent as the HTTP route does, waiting out a lock held by someone else.
    async fn delete(&self, key: &AgentKey, found: Found, deadline: Deadline) -> Outcome {
        let place = self.place(key, &found);
        let target = DeleteTarget {
            key: key.clone(),
            user_session_id: user_session_id(&key.agent_id).map(str::to_string),
            describe: None,
        };
        let deleter = Deleter::new(self.store, self.agentkit, self.delete);
        let mut seen = found.record;
        for round in 0..BUSY_ROUNDS {
            match deleter
                .delete_agent(&target, &place, seen.clone(), None, deadline)
                .await
            {
                Ok(Deleted::Done) => return Outcome::Deleted,
                Ok(Deleted::AlreadyGone) => return Outcome::AlreadyGone,
                Err(Error::AgentBusy { retry_after_s, .. }) if round + 1 < BUSY_ROUNDS => {
                    let pause = Duration::from_secs(retry_after_s.max(1));
                    if !deadline.allows(pause) {
                        break;
                    }
                    tokio::time::sleep(pause).await;
                    seen = match self.store.get(key).await {
                        Ok(r) => r,
                        Err(e) => {
                            tracing::warn!(agent = %key, error = %e, "offboarding: cannot read the record");
                            return Outcome::Failed;
                        }
                    };
                }
                Err(e) => {
                    tracing::warn!(agent = %key, error = %e, "offboarding: could not delete the agent");
                    return Outcome::Failed;
                }
            }
        }
        Outcome::Failed
    }

    /// Every Tool of the agent's kind, the one it was found on (or its record names) first.
    fn place(&self, key: &AgentKey, found: &Found) -> AgentPlace {
        let home = found.home.clone().or_else(|| {
            let r = found.record.as_ref()?;
            Some((
                r.description.tool_id.clone()?,
                r.description.region.clone()?,
                Retention::Recoverable,
            ))
        });
        let region = home
            .as_ref()
            .map(|(_, r, _)| r.clone())
            .or_else(|| {
                regions(self.registry, self.agentkit)
                    .first()
                    .map(|r| r.to_string())
            })
            .unwrap_or_default();
        let mut tools: Vec<String> = home.iter().map(|(t, _, _)| t.clone()).collect();
        if let Some(kind_tools) = self.registry.kind(key.kind) {
            for t in kind_tools.all_tools() {
                if !tools.iter().any(|have| have == t) {
                    tools.push(t.to_string());
                }
            }
        }
        AgentPlace { region, tools }
    }
}
