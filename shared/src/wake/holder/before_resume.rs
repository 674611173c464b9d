//! Steps 2 (reconcile) and 4 (which snapshot) of the holder's path (docs/wake-protocol.md).

use crate::agentkit::types::{DeleteSession, MetadataEntry, Session, Snapshot};
use crate::agentkit::AgentKit;
use crate::domain::failure::{recorded_failure, SNAPSHOT_IN_PROGRESS};
use crate::domain::{AgentRecord, SessionPhase, WakeState};
use crate::error::Error;
use crate::invocation::Deadline;
use crate::locate::Home;
use crate::locate::{choose, live_session, session, snapshots, Choice, Expected};
use crate::lock::{Held, Written};
use crate::store::{AgentStore, Changes};
use crate::timestamp::now_ms;
use crate::wake::{WakeOutcome, Waking};

impl<S: AgentStore, K: AgentKit> Waking<'_, '_, S, K> {
    /// A session earlier holders of this wake started: by UserSessionId, else an orphan.
    pub(in crate::wake) async fn find_started(
        &self,
        home: &Home,
        resume_sent_at_ms: Option<u64>,
        metadata: &[MetadataEntry],
        deadline: Deadline,
    ) -> Result<Option<Session>, Error> {
        let agents = self.agents;
        match (self.target.user_session_id(), resume_sent_at_ms) {
            (Some(usid), _) => Ok(live_session(agents.agentkit, home, usid, deadline).await?),
            (None, Some(sent)) => {
                // AgentKit writes whole seconds; allow for that and for clocks a little apart.
                let margin = agents.settings.lock.skew_margin.as_millis() as u64 + 1000;
                crate::locate::claims::adopt_orphan(
                    &agents.store,
                    agents.agentkit,
                    home,
                    &self.target.key,
                    sent,
                    margin,
                    metadata,
                    deadline,
                )
                .await
            }
            (None, None) => Ok(None),
        }
    }

    /// End a session stuck starting past its readiness timeout, and confirm it is gone.
    pub(super) async fn end_stuck(
        &self,
        home: &Home,
        session_id: &str,
        deadline: Deadline,
    ) -> Result<(), Error> {
        tracing::warn!(session_id, "wake: ending a session stuck starting first");
        let request = DeleteSession {
            tool_id: home.tool_id.clone(),
            session_id: session_id.to_string(),
        };
        match self
            .agents
            .agentkit
            .call(&home.region, &request, deadline)
            .await
        {
            Err(e) if !e.is_not_found() => return Err(e.into()),
            _ => {}
        }
        match session(self.agents.agentkit, home, session_id, deadline).await? {
            None => Ok(()),
            Some(s) if s.phase() == SessionPhase::Ended => Ok(()),
            Some(_) => Err(Error::SessionStuck(format!(
                "session {session_id} is being ended; it was still starting after the readiness timeout"
            ))),
        }
    }

    /// A reconcile that could not finish: a failed wake, unless a Resume is unaccounted for (202).
    pub(super) async fn interrupted(
        &self,
        mut held: Held,
        err: Error,
    ) -> Result<WakeOutcome, Error> {
        if held.record.resume_sent_at_ms.is_none() {
            return Err(self.fail(&mut held, err, None).await);
        }
        tracing::warn!(agent = %held.key, error = %err, "reconcile failed; an earlier Resume is still unaccounted for, handing polling over");
        self.hand_over(held).await
    }

    /// Step 4: the snapshot to wake from; errors have given the lock back. A snapshot being made is
    /// waited for within the wait; one not listed yet, within the deadline.
    pub(super) async fn pick_snapshot(
        &self,
        held: &mut Held,
        home: &Home,
        before: Option<&AgentRecord>,
        mut listed: Option<Vec<Snapshot>>,
    ) -> Result<Picked, Error> {
        let deadline = self.driver.deadline();
        let (agents, target) = (self.agents, self.target);
        let key = &target.key;
        let recorded = before.and_then(|b| b.snapshot_id.clone());
        let expected = self.expected_snapshot(before);
        let mut backoff = agents.settings.polling();
        let mut waited = false;
        loop {
            let listing = match listed.take() {
                Some(l) => l,
                None => match snapshots(agents.agentkit, home, key, deadline).await {
                    Ok(l) => l,
                    Err(e) => return Err(self.fail(held, e.into(), None).await),
                },
            };
            let choice = choose(
                &listing,
                key,
                target.snapshot_id.as_deref(),
                recorded.as_deref(),
                expected.as_ref(),
                agents.settings.snapshot_stuck_after,
                now_ms(),
            );
            match choice {
                // Ready, too late to send Resume: give it back so the next caller wakes it at once.
                Choice::Wake { .. }
                    if waited && deadline.remaining() < agents.agentkit.request_timeout() =>
                {
                    let (state, changes) = nothing_woken(held.before.as_ref(), home);
                    return match self.driver.lock.release(held, state, changes).await? {
                        Written::Done(r) => Ok(Picked::Waiting(r)),
                        Written::Lost(r) => Ok(Picked::Lost(r)),
                    };
                }
                Choice::Wake {
                    snapshot,
                    passed_over,
                } => {
                    if let Some(failed) = passed_over {
                        tracing::warn!(agent = %key, %failed, "the newest snapshot failed; waking the newest Ready one");
                    }
                    return Ok(Picked::Snapshot { snapshot, listing });
                }
                // Wait for it while a Resume could still be sent after it; else say so.
                Choice::Wait { snapshot_id } => {
                    let room = agents.agentkit.request_timeout();
                    let until = if snapshot_id.is_some() {
                        self.driver.wait()
                    } else {
                        deadline
                    };
                    if !backoff.wait(until, room).await {
                        return self.await_snapshot(held, home, snapshot_id).await;
                    }
                    waited = true;
                }
                Choice::Stuck { snapshot_id } => {
                    let err = Error::SnapshotStuck { snapshot_id };
                    return Err(self.fail(held, err, None).await);
                }
                Choice::Unknown { status, .. } => {
                    self.give_back(held, home).await;
                    return Err(Error::unknown_status("snapshot", Some(&status)));
                }
                Choice::Nothing => {
                    self.give_back(held, home).await;
                    return Err(Error::NotWakeable(match &target.snapshot_id {
                        Some(id) => format!("snapshot {id} is not Ready or does not exist"),
                        None => "the agent has neither a live session nor a Ready snapshot".into(),
                    }));
                }
            }
        }
    }

    /// The snapshot is still being made: the agent stays `waking` at least one poll pause, so a
    /// storm of short requests lists once per pause.
    async fn await_snapshot(
        &self,
        held: &mut Held,
        home: &Home,
        snapshot_id: Option<String>,
    ) -> Result<Picked, Error> {
        let key = &self.target.key;
        let now = now_ms();
        let until = self
            .driver
            .wait()
            .epoch_ms()
            .max(now + self.agents.settings.pace().gap(now, now).as_millis() as u64);
        let what = snapshot_id.map_or_else(
            || "the last session's snapshot (not listed yet)".to_string(),
            |id| format!("snapshot {id}"),
        );
        tracing::info!(agent = %key, %what, "wake: waiting for the newest snapshot");
        let changes = Changes {
            error: Some(Some(recorded_failure(
                SNAPSHOT_IN_PROGRESS,
                &format!("waiting for {what}"),
            ))),
            lease_until_ms: Some(until),
            poll_until_ms: Some(until),
            describe: Some(home.description()),
            ..Changes::default()
        };
        match self.driver.lock.write(held, changes).await? {
            Written::Done(r) => Ok(Picked::Waiting(r)),
            Written::Lost(r) => Ok(Picked::Lost(r)),
        }
    }

    /// The last session's snapshot, if it expired within the snapshot grace: maybe not listed yet.
    fn expected_snapshot(&self, before: Option<&AgentRecord>) -> Option<Expected> {
        let before = before?;
        let session_id = before.session_id.clone()?;
        let expired = before
            .session_expire_at
            .as_deref()
            .and_then(crate::timestamp::epoch_ms)?;
        let now = now_ms();
        let skew = self.agents.settings.lock.skew_margin.as_millis() as u64;
        let grace = self.agents.settings.snapshot_grace.as_millis() as u64;
        // Only a session that ended by expiring: one ended early (deleted, stopped) leaves none.
        (expired <= now + skew && now < expired + grace).then_some(Expected { session_id })
    }
}

/// The metadata of the snapshot a Resume was sent for (to recognise its session later).
pub(super) fn snapshot_metadata(
    listing: &[Snapshot],
    snapshot_id: Option<&str>,
) -> Vec<MetadataEntry> {
    listing
        .iter()
        .find(|s| s.snapshot_id.as_deref() == snapshot_id && snapshot_id.is_some())
        .map(|s| s.session_metadata.clone())
        .unwrap_or_default()
}

/// What a wake that found no live session gives back: asleep, announcing any end it learned.
pub(super) fn nothing_woken(before: Option<&AgentRecord>, home: &Home) -> (WakeState, Changes) {
    let rested = before.map(|b| b.state);
    let mut changes = asleep_at(home);
    changes.announce = crate::lock::agent::announced_end(rested);
    // The recorded session is the one found not live: forgotten. A lapsed change's fields stay.
    if rested == Some(WakeState::Awake) {
        changes = crate::lock::agent::forget_session(changes);
    }
    (WakeState::Asleep, changes)
}

/// What a lock given back with nothing woken writes: no Resume on its way, and where it rests.
pub(super) fn asleep_at(home: &Home) -> Changes {
    Changes {
        resume_sent_at_ms: Some(None),
        describe: Some(home.description()),
        ..Changes::default()
    }
}

/// What step 4 came to.
#[allow(clippy::large_enum_variant)] // made once per wake, consumed at once
pub(super) enum Picked {
    /// Wake from this snapshot; `listing`: the agent's snapshots just listed.
    Snapshot {
        snapshot: Snapshot,
        listing: Vec<Snapshot>,
    },
    /// The snapshot is still being made: the agent is left waking, this record says so.
    Waiting(AgentRecord),
    /// The lock was lost meanwhile: follow whoever has it.
    Lost(Option<AgentRecord>),
}
