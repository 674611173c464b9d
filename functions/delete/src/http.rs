//! The HTTP routes of the delete function.
//!
//! Both routes authorise exactly as resume does (another owner's agent is 404, admins may act
//! on any agent, `snapshot-<id>` agents are admin-only), read the agent record once
//! (consistently), find the agent's Tool (the record's, else [`locate`]), and hand the work to
//! [`crate::deletion`]. Both answer 204 when there is nothing left to delete.
//!
//! Choices where the specification is silent:
//! - `If-Match` takes one entity tag, `"<version>"` (a weak `W/` prefix is ignored); `*`
//!   matches any agent; anything else can match no version and answers 412. An agent without
//!   a record has version 0.
//! - A snapshot the agent does not have answers 404 `SNAPSHOT_NOT_FOUND`, unless snapwake
//!   deleted that very snapshot of that agent within the tombstone time (then 204: deleting
//!   is idempotent). Another agent's snapshot is therefore never deleted through this agent.
//! - A tombstoned agent answers 204 to both routes (its snapshots went with it).

use lambda_http::{Body, Request, Response};
use snapwake::agentkit::port::AGENT_SNAPSHOT_PAGES;
use snapwake::agentkit::types::{ListSessionSnapshots, Snapshot};
use snapwake::agentkit::{list_all, AgentKit};
use snapwake::domain::{AgentKey, AgentRecord, Retention, ToolRegistry};
use snapwake::error::{Error, Result};
use snapwake::http::edge;
use snapwake::http::edge::Route;
use snapwake::identity::{describe, may_act, Caller, Place};
use snapwake::identity::{user_session_id, SNAPSHOT_AGENT_PREFIX};
use snapwake::invocation::Deadline;
use snapwake::locate;
use snapwake::store::{AgentStore, ScheduleStore, Within};

use crate::deletion::{decide, AgentPlace, Decision, DeleteTarget, Deleter, SnapshotRef};
use crate::Delete;

pub const ROUTES: [Route; 2] = [
    Route::new(
        "DELETE",
        "/v1/agents/{kind}/{agent_id}/snapshots/{snapshot_id}",
    ),
    Route::new("DELETE", "/v1/agents/{kind}/{agent_id}"),
];

/// Where a snapshot was looked for.
enum Lookup {
    /// Neither a record nor AgentKit knows the agent.
    UnknownAgent,
    /// The agent is known, the snapshot is not among its snapshots.
    NotTheAgents,
    /// The agent's snapshot, on this Tool.
    Found {
        tool_id: String,
        region: String,
        snapshots: Vec<Snapshot>,
    },
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Delete<S, K> {
    /// Serve one request, in its invocation's span; every failure becomes a problem+json
    /// response.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        snapwake::invocation::Invocation::http(crate::FUNCTION)
            .run(edge::serve(&request, self.serve(&request)))
            .await
    }

    async fn serve(&self, request: &Request) -> Result<Response<Body>> {
        let matched = edge::route(&ROUTES, request.method().as_str(), edge::path(request))?;
        let caller = Caller::from_request(request, &self.identity)?;
        let kind = edge::parse_kind(&matched.params[0])?;
        let agent_id = edge::parse_id(&matched.params[1])?;
        let snapshot_id = matched
            .params
            .get(2)
            .map(|s| edge::parse_id(s))
            .transpose()?;
        // An If-Match that is not text cannot match any version: never read it as absent.
        let if_match = if_match(
            request
                .headers()
                .get("if-match")
                .map(|v| v.to_str().unwrap_or("(not text)")),
        )?;
        let deadline = Deadline::for_request(request, self.settings.budget);
        let key = AgentKey::new(kind, agent_id);
        // Every store call of the request takes its time from the request's budget.
        let store = Within::new(&self.store, deadline);

        let record = store.get(&key).await?;
        if !may_act(&caller, &key, record.as_ref()) {
            return Err(Error::AgentNotFound);
        }
        // Cheap refusals first (a tombstone, a stale If-Match, a lease), before AgentKit.
        if decide(&self.settings.lock, record.as_ref(), if_match)? == Decision::Gone {
            return Ok(edge::no_content());
        }
        match snapshot_id {
            Some(snapshot_id) => {
                self.delete_snapshot(
                    &store,
                    &caller,
                    key,
                    record,
                    &snapshot_id,
                    if_match,
                    deadline,
                )
                .await?
            }
            None => {
                self.delete_agent(&store, &caller, key, record, if_match, deadline)
                    .await?
            }
        }
        Ok(edge::no_content())
    }

    #[allow(clippy::too_many_arguments)]
    async fn delete_snapshot(
        &self,
        store: &Within<'_, S>,
        caller: &Caller,
        key: AgentKey,
        record: Option<AgentRecord>,
        snapshot_id: &str,
        if_match: Option<u64>,
        deadline: Deadline,
    ) -> Result<()> {
        // A `snapshot-<id>` agent has exactly one snapshot.
        if let Some(own) = key.agent_id.strip_prefix(SNAPSHOT_AGENT_PREFIX) {
            if own != snapshot_id {
                return Err(Error::SnapshotNotFound);
            }
        }
        let registry = self.registry.get(store).await?;
        let lookup = self
            .find_snapshot(&registry, &key, record.as_ref(), snapshot_id, deadline)
            .await?;
        let deleter = Deleter::new(store, &self.agentkit, &self.settings.lock);
        let (tool_id, region, snapshots) = match lookup {
            Lookup::UnknownAgent => return Err(Error::AgentNotFound),
            Lookup::NotTheAgents => {
                return if deleter.was_deleted(&key, snapshot_id).await? {
                    Ok(())
                } else {
                    Err(Error::SnapshotNotFound)
                }
            }
            Lookup::Found {
                tool_id,
                region,
                snapshots,
            } => (tool_id, region, snapshots),
        };
        let target = DeleteTarget {
            describe: Some(describe(
                caller,
                &key,
                record.as_ref(),
                Some(Place {
                    tool_id: &tool_id,
                    region: &region,
                    retention: Retention::Recoverable,
                }),
                Some(&snapshots),
            )),
            ..DeleteTarget::of(&key)
        };
        deleter
            .delete_snapshot(
                &target,
                &SnapshotRef {
                    tool_id,
                    region,
                    snapshot_id: snapshot_id.to_string(),
                },
                record,
                if_match,
                deadline,
            )
            .await?;
        Ok(())
    }

    async fn delete_agent(
        &self,
        store: &Within<'_, S>,
        caller: &Caller,
        key: AgentKey,
        record: Option<AgentRecord>,
        if_match: Option<u64>,
        deadline: Deadline,
    ) -> Result<()> {
        let registry = self.registry.get(store).await?;
        let found = locate::home_or_locate(
            &self.agentkit,
            &registry,
            &key,
            record.as_ref(),
            None,
            deadline,
        )
        .await?;
        let (home, snapshots) = match found {
            Some(w) => (Some((w.home.tool_id, w.home.region)), w.snapshots),
            // A record without a Tool we know: nothing of it reached AgentKit that we could
            // find; the tombstone is still written.
            None if record.is_some() => (None, None),
            None => return Err(Error::AgentNotFound),
        };
        // Every Tool of the kind in every region, the agent's own first: an agent deleted is
        // deleted wherever a session or snapshot of it may be.
        let place = AgentPlace::of(
            &registry,
            &self.agentkit,
            key.kind,
            home.as_ref().map(|(t, r)| (t.as_str(), r.as_str())),
        );
        let target = DeleteTarget {
            describe: home.as_ref().map(|(tool, region)| {
                describe(
                    caller,
                    &key,
                    record.as_ref(),
                    Some(Place {
                        tool_id: tool,
                        region,
                        retention: retention_of(&registry, &key, tool),
                    }),
                    snapshots.as_deref(),
                )
            }),
            ..DeleteTarget::of(&key)
        };
        Deleter::new(store, &self.agentkit, &self.settings.lock)
            .delete_agent(&target, &place, record, if_match, deadline)
            .await?;
        Ok(())
    }

    /// Look for `snapshot_id` among the agent's snapshots: on the record's Tool (or where
    /// [`locate`] finds the agent) first, then on the kind's other snapshot Tools.
    async fn find_snapshot(
        &self,
        registry: &ToolRegistry,
        key: &AgentKey,
        record: Option<&AgentRecord>,
        snapshot_id: &str,
        deadline: Deadline,
    ) -> Result<Lookup> {
        let found =
            locate::home_or_locate(&self.agentkit, registry, key, record, None, deadline).await?;
        let (home, mut listed) = match found {
            Some(w) => (Some((w.home.tool_id, w.home.region)), w.snapshots),
            None if record.is_some() => (None, None),
            None => return Ok(Lookup::UnknownAgent),
        };
        let Some(region) = home
            .as_ref()
            .map(|(_, r)| r.clone())
            .or_else(|| registry.region.clone())
        else {
            return Ok(Lookup::NotTheAgents);
        };
        let mut tools: Vec<String> = home.iter().map(|(t, _)| t.clone()).collect();
        if let Some(kind_tools) = registry.kind(key.kind) {
            for t in kind_tools.snapshot_tools() {
                if !tools.iter().any(|have| have == t) {
                    tools.push(t.to_string());
                }
            }
        }
        let usid = user_session_id(&key.agent_id);
        for tool_id in tools {
            let snapshots = match (listed.take(), usid) {
                (Some(s), _) => s,
                (None, Some(usid)) => {
                    let req = ListSessionSnapshots {
                        tool_id: tool_id.clone(),
                        user_session_id: Some(usid.to_string()),
                        ..ListSessionSnapshots::default()
                    };
                    match list_all(&self.agentkit, &region, req, AGENT_SNAPSHOT_PAGES, deadline)
                        .await
                    {
                        Ok(all) => all,
                        Err(e) if e.is_not_found() => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
                // A `snapshot-<id>` agent's one snapshot is its id (checked by the caller):
                // on its recorded Tool, deleting it is safe even if it is gone already.
                (None, None) => {
                    return Ok(Lookup::Found {
                        tool_id,
                        region,
                        snapshots: Vec::new(),
                    })
                }
            };
            // Trust but verify the service's filter: never act on another agent's snapshot.
            let mine = snapshots.iter().any(|s| {
                s.snapshot_id.as_deref() == Some(snapshot_id)
                    && match usid {
                        Some(u) => s.user_session_id.as_deref() == Some(u),
                        None => true,
                    }
            });
            if mine {
                return Ok(Lookup::Found {
                    tool_id,
                    region,
                    snapshots,
                });
            }
        }
        Ok(Lookup::NotTheAgents)
    }
}

fn retention_of(registry: &ToolRegistry, key: &AgentKey, tool_id: &str) -> Retention {
    if registry.tool(key.kind, Retention::Temporary) == Some(tool_id) {
        Retention::Temporary
    } else {
        Retention::Recoverable
    }
}

/// The `If-Match` version: `None` without the header or with `*`.
fn if_match(value: Option<&str>) -> Result<Option<u64>> {
    let Some(raw) = value.map(str::trim) else {
        return Ok(None);
    };
    if raw == "*" {
        return Ok(None);
    }
    let tag = raw.strip_prefix("W/").unwrap_or(raw);
    tag.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .and_then(|v| v.parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| Error::PreconditionFailed {
            given: raw.chars().take(40).collect(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_takes_one_quoted_version() {
        assert_eq!(if_match(None).unwrap(), None);
        assert_eq!(if_match(Some("*")).unwrap(), None);
        assert_eq!(if_match(Some("\"7\"")).unwrap(), Some(7));
        assert_eq!(if_match(Some(" W/\"12\" ")).unwrap(), Some(12));
        for bad in ["7", "\"x\"", "\"1\", \"2\"", "\"-1\"", ""] {
            assert!(
                matches!(if_match(Some(bad)), Err(Error::PreconditionFailed { .. })),
                "{bad:?}"
            );
        }
    }
}
