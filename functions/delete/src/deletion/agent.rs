//! Deleting a whole agent under its lock: every session ended, every snapshot deleted, on
//! every Tool of its kind in every region, then the `gone` tombstone. The retention sweep's
//! idle-agent delete is the same, after checking under the lock that the agent is still idle.

use super::*;

/// What the agent has on one Tool in one region.
struct OnTool {
    snapshots: Vec<Snapshot>,
    /// An active session of the agent is there.
    live: bool,
}

impl<'a, S: AgentStore + ScheduleStore, K: AgentKit> Deleter<'a, S, K> {
    /// Delete the agent: end its sessions, delete its snapshots, leave the tombstone.
    pub async fn delete_agent(
        &self,
        target: &DeleteTarget,
        place: &AgentPlace,
        seen: Option<AgentRecord>,
        if_match: Option<u64>,
        deadline: Deadline,
    ) -> Result<Deleted, Error> {
        self.delete_agent_unless_used(target, place, seen, if_match, None, deadline)
            .await
    }

    /// Delete the agent as [`Self::delete_agent`] does if, under its lock and on a fresh
    /// listing, `policy` still finds it idle; else hand it back untouched
    /// ([`Deleted::NotIdle`]).
    pub async fn delete_idle_agent(
        &self,
        target: &DeleteTarget,
        place: &AgentPlace,
        seen: Option<AgentRecord>,
        policy: &RetentionPolicy,
        deadline: Deadline,
    ) -> Result<Deleted, Error> {
        self.delete_agent_unless_used(target, place, seen, None, Some(policy), deadline)
            .await
    }

    async fn delete_agent_unless_used(
        &self,
        target: &DeleteTarget,
        place: &AgentPlace,
        seen: Option<AgentRecord>,
        if_match: Option<u64>,
        idle: Option<&RetentionPolicy>,
        deadline: Deadline,
    ) -> Result<Deleted, Error> {
        let lock = self.lock(deadline);
        let mut held = match self.acquire(&lock, target, seen, if_match).await? {
            Taken::Gone => return Ok(Deleted::AlreadyGone),
            Taken::Held(h) => h,
        };
        // The session a wake recorded, in case a listing does not show it yet.
        let recorded = held
            .held
            .record
            .description
            .tool_id
            .clone()
            .zip(held.held.record.session_id.clone());
        let result = match idle {
            Some(policy) => match self.still_idle(target, place, policy, held.deadline).await {
                Ok(true) => self.clean(target, place, recorded, held.deadline).await,
                Ok(false) => {
                    self.restore(&lock, &mut held, None).await?;
                    return Ok(Deleted::NotIdle);
                }
                Err(e) => Err(e),
            },
            None => self.clean(target, place, recorded, held.deadline).await,
        };
        if let Err(e) = result {
            if let Err(release) = self.restore(&lock, &mut held, None).await {
                tracing::warn!(agent = %target.key, error = %release, "could not release the lock after a failed delete");
            }
            return Err(e);
        }
        let tombstone = Changes {
            error: Some(None),
            resume_sent_at_ms: Some(None),
            snapshots: Some(Vec::new()),
            expires_at: Some(Some(now_s() + TOMBSTONE_TTL_S)),
            announce: Some(snapwake::invocation::announcement(
                snapwake::domain::Announce::Deleted,
            )),
            ..Changes::default()
        };
        match lock
            .release(&mut held.held, WakeState::Gone, tombstone)
            .await?
        {
            Written::Done(_) => {
                tracing::info!(agent = %target.key, idle = idle.is_some(), "agent deleted; tombstone written");
                // Its schedule goes with it. Should this write fail, the tick drops a schedule
                // whose agent is gone (docs/schedules.md).
                if let Err(e) = self.store.delete_schedule(&target.key).await {
                    tracing::warn!(agent = %target.key, error = %e, "the deleted agent's schedule is left to the tick");
                }
                Ok(Deleted::Done)
            }
            // Our lease ran out and somebody else holds the agent now: we cannot promise it
            // is gone. A retry decides again.
            Written::Lost(_) => Err(Error::AgentBusy {
                detail: "the agent changed while it was being deleted; retry".into(),
                retry_after_s: 1,
            }),
        }
    }

    /// Whether the agent is idle by `policy` on a fresh listing of every place.
    async fn still_idle(
        &self,
        target: &DeleteTarget,
        place: &AgentPlace,
        policy: &RetentionPolicy,
        deadline: Deadline,
    ) -> Result<bool, Error> {
        let mut snapshots = Vec::new();
        let mut live = false;
        for tool in &place.tools {
            for region in &place.regions {
                if let Some(found) = self.on_tool(target, tool, region, deadline).await? {
                    live |= found.live;
                    snapshots.extend(found.snapshots);
                }
            }
        }
        Ok(policy.is_idle(&snapshots, live, now_ms()))
    }

    /// What the agent has on `tool` in `region` (`None`: the Tool is not in that region).
    async fn on_tool(
        &self,
        target: &DeleteTarget,
        tool: &str,
        region: &str,
        deadline: Deadline,
    ) -> Result<Option<OnTool>, Error> {
        let Some((_, live)) = self
            .sessions_on(target, tool, region, None, deadline)
            .await?
        else {
            return Ok(None);
        };
        let snapshots = self.snapshots_on(target, tool, region, deadline).await?;
        Ok(Some(OnTool { snapshots, live }))
    }

    /// The agent's sessions on `tool` in `region` (with the `recorded` one), and whether one
    /// is active; `None`: the Tool is not in that region. A `snapshot-<id>` agent's sessions
    /// carry no UserSessionId: only the recorded one is known to be its own.
    async fn sessions_on(
        &self,
        target: &DeleteTarget,
        tool: &str,
        region: &str,
        recorded: Option<&(String, String)>,
        deadline: Deadline,
    ) -> Result<Option<(Vec<String>, bool)>, Error> {
        let mut sessions: Vec<String> = recorded
            .filter(|(t, _)| t == tool)
            .map(|(_, s)| s.clone())
            .into_iter()
            .collect();
        let mut live = false;
        if let Some(usid) = target.user_session_id.as_deref() {
            let req = ListSessions {
                tool_id: tool.to_string(),
                filters: Some(vec![Filter::one("UserSessionId", usid)]),
                ..ListSessions::default()
            };
            match list_all(self.agentkit, region, req, SESSION_PAGES, deadline).await {
                Ok(listed) => {
                    for s in listed
                        .into_iter()
                        .filter(|s| s.user_session_id.as_deref() == Some(usid))
                    {
                        live |= s.is_active();
                        sessions.extend(s.session_id);
                    }
                }
                // The Tool does not exist in this region: nothing of the agent is there.
                Err(e) if e.is_not_found() => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        sessions.sort();
        sessions.dedup();
        Ok(Some((sessions, live)))
    }

    /// The agent's snapshots on `tool` in `region`: by an exact UserSessionId listing
    /// (re-checked), or a `snapshot-<id>` agent's own one, whatever Tool holds it.
    pub(super) async fn snapshots_on(
        &self,
        target: &DeleteTarget,
        tool: &str,
        region: &str,
        deadline: Deadline,
    ) -> Result<Vec<Snapshot>, Error> {
        let Some(usid) = target.user_session_id.as_deref() else {
            return Ok(target
                .own_snapshot_id()
                .map(|own| Snapshot {
                    snapshot_id: Some(own.to_string()),
                    ..Snapshot::default()
                })
                .into_iter()
                .collect());
        };
        let req = ListSessionSnapshots {
            tool_id: tool.to_string(),
            user_session_id: Some(usid.to_string()),
            ..ListSessionSnapshots::default()
        };
        match list_all(self.agentkit, region, req, SNAPSHOT_PAGES, deadline).await {
            // Trust but verify the filter: never delete another agent's snapshot.
            Ok(listed) => Ok(listed
                .into_iter()
                .filter(|s| s.user_session_id.as_deref() == Some(usid))
                .collect()),
            Err(e) if e.is_not_found() => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// End every session of the agent, then delete every snapshot, Tool by Tool and region
    /// by region. Sessions first: a session that expired later would leave one more snapshot
    /// behind.
    async fn clean(
        &self,
        target: &DeleteTarget,
        place: &AgentPlace,
        recorded: Option<(String, String)>,
        deadline: Deadline,
    ) -> Result<(), Error> {
        for tool in &place.tools {
            for region in &place.regions {
                let Some((sessions, _)) = self
                    .sessions_on(target, tool, region, recorded.as_ref(), deadline)
                    .await?
                else {
                    continue;
                };
                for session_id in sessions {
                    let req = DeleteSession {
                        tool_id: tool.clone(),
                        session_id,
                    };
                    match self.agentkit.call(region, &req, deadline).await {
                        Ok(_) => {}
                        Err(e) if e.is_not_found() => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                for snapshot in self.snapshots_on(target, tool, region, deadline).await? {
                    if let Some(id) = snapshot.snapshot_id {
                        self.delete_snapshot_call(region, tool, &id, deadline)
                            .await?;
                    }
                }
            }
        }
        Ok(())
    }
}
