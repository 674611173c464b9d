//! The winner's path (docs/wake-protocol.md, "A wake, step by step"): locate, reconcile, resume,
//! record, poll.
//!
//! Every step after the acquire is a fenced write, in this order, so that a holder stopped at
//! any point leaves a record the next caller can finish from without a second Resume:
//!
//! 1. where: the record's Tool, else [`crate::locate::locate`] (only the winner lists);
//! 2. reconcile: a session an earlier holder of this agent started is adopted (GetSession of
//!    the session the previous generation recorded; ListSessions by UserSessionId; for a
//!    `snapshot-<id>` agent after an unknown Resume, the one unclaimed session it left);
//! 3. a Resume sent by somebody whose outcome nobody knows yet (`resume_sent_at` within the
//!    readiness timeout) is waited out, never doubled;
//! 4. the snapshot: the named one, else the newest Ready one, re-checked as the agent's own;
//! 5. budget: at least one AgentKit request timeout left, else the lock is given back (503);
//! 6. `resume_sent_at`, the snapshot, the Tool, lease = the readiness timeout (fenced);
//! 7. `ResumeSessionFromSnapshot`: its SessionId is recorded at once (fenced); a NotFound is
//!    422 (the snapshot is gone, the agent rests); an unknown outcome keeps the lock and
//!    answers 202; a refusal records `failed` (the snapshot untouched);
//! 8. poll GetSession until Ready (complete), ended (failed), or the budget ends (202).

use crate::agentkit::types::metadata_value;
use crate::agentkit::types::{DeleteSession, ResumeSessionFromSnapshot, Session, Snapshot};
use crate::agentkit::AgentKit;
use crate::domain::failure::{
    recorded_code, recorded_failure, SESSION_STUCK, SNAPSHOT_IN_PROGRESS,
};
use crate::domain::Description;
use crate::domain::{Retention, SessionPhase, WakeState};
use crate::error::Error;
use crate::http::problem::Problem;
use crate::identity::names::METADATA_DISPLAY_NAME_KEY;
use crate::lock::{AgentLock, Held, Written};
use crate::store::{AgentStore, Changes};
use crate::timestamp::now_ms;
use crate::view::METADATA_CREATOR_KEY;

use super::watch::{Polled, Poller, Watched};
use super::{Wake, WakeOutcome, WakeTarget};
use crate::locate::sessions::{
    choose, live_session, own_snapshots, session, snapshots, Choice, Expected,
};
use crate::locate::Home;

/// What the holder knows when it starts polling a recorded session.
pub(super) struct Recorded {
    pub session_id: String,
    pub snapshot_id: Option<String>,
    /// The session as last seen (an adopted one), so the first poll is not repeated.
    pub seen: Option<Session>,
    /// This wake started it (or a concurrent, earlier holder of this wake did).
    pub resumed: bool,
}

impl<S: AgentStore, K: AgentKit> Wake<'_, S, K> {
    /// Hold the agent through its wake. `session_ended`: the caller already saw the session of
    /// the previous generation ended (no need to ask again).
    pub(super) async fn hold(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        mut held: Held,
        session_ended: bool,
    ) -> Result<WakeOutcome, Error> {
        let deadline = lock.deadline();
        let key = &target.key;

        // 1. Where the agent lives.
        let found = crate::locate::home_or_locate(
            self.agentkit,
            self.registry,
            key,
            Some(&held.record),
            target.home.as_ref(),
            deadline,
        );
        let (home, mut listed) = match Box::pin(found).await {
            Ok(Some(w)) => (w.home, w.snapshots),
            Ok(None) => {
                lock.give_back_unknown(&mut held).await;
                return Err(Error::AgentNotFound);
            }
            Err(e) => return Err(self.fail(lock, &mut held, e).await),
        };

        // 2. Reconcile before resuming.
        let before = held.before.clone();
        let previous = before
            .as_ref()
            .filter(|b| {
                !session_ended && b.description.tool_id.as_deref() == Some(home.tool_id.as_str())
            })
            .and_then(|b| b.session_id.clone());
        let mut adopted = None;
        if let Some(previous) = previous {
            match session(self.agentkit, &home, &previous, deadline).await {
                Ok(Some(s)) => match s.phase() {
                    SessionPhase::Ended => {}
                    SessionPhase::Unknown => {
                        let err = Error::unknown_status("session", s.status.as_deref());
                        return Err(
                            Box::pin(self.fail_on(lock, &mut held, err, Some(&previous))).await,
                        );
                    }
                    SessionPhase::Starting if was_stuck(before.as_ref()) => {
                        // Still starting past its readiness timeout: a wake that already said
                        // so ends it before it resumes again; otherwise say so now.
                        let ended = before.as_ref().is_some_and(|b| {
                            b.error.as_deref().and_then(recorded_code) == Some(SESSION_STUCK)
                        });
                        if !ended {
                            let err = Error::SessionStuck(format!(
                                "session {previous} was still starting after the readiness timeout"
                            ));
                            return Err(Box::pin(self.fail_on(
                                lock,
                                &mut held,
                                err,
                                Some(&previous),
                            ))
                            .await);
                        }
                        if let Err(e) = Box::pin(self.end_stuck(&home, &previous, deadline)).await {
                            return Err(Box::pin(self.fail_on(
                                lock,
                                &mut held,
                                e,
                                Some(&previous),
                            ))
                            .await);
                        }
                    }
                    SessionPhase::Starting | SessionPhase::Usable => adopted = Some(s),
                },
                Ok(None) => {}
                Err(e) => return Box::pin(self.interrupted(lock, target, held, e.into())).await,
            }
        }
        if adopted.is_none() {
            let metadata = snapshot_metadata(
                listed.as_deref().unwrap_or_default(),
                before.as_ref().and_then(|b| b.snapshot_id.as_deref()),
            );
            let sent = held.record.resume_sent_at_ms;
            adopted = match self
                .find_started(&home, target, sent, &metadata, deadline)
                .await
            {
                Ok(found) => found,
                Err(e) => return Box::pin(self.interrupted(lock, target, held, e)).await,
            };
        }
        if let Some(s) = adopted {
            // A wake in flight (a holder that died, an unknown Resume) started it: it counts
            // as woken. A session that simply was alive all along does not.
            let resumed = before
                .as_ref()
                .is_some_and(|b| b.state == WakeState::Waking || b.resume_sent_at_ms.is_some());
            tracing::info!(agent = %key, resumed, "wake: adopted a live session");
            let recorded = Recorded {
                session_id: s.session_id.clone().unwrap_or_default(),
                snapshot_id: before.as_ref().and_then(|b| b.snapshot_id.clone()),
                seen: Some(s),
                resumed,
            };
            let snapshots = listed.unwrap_or_default();
            return Box::pin(self.record_and_poll(lock, target, held, &home, recorded, snapshots))
                .await;
        }

        // 3. A Resume somebody sent, outcome unknown: wait it out rather than double it.
        if let Some(sent) = held.record.resume_sent_at_ms {
            let until = sent + self.settings.ready_timeout.as_millis() as u64;
            if now_ms() < until {
                tracing::info!(agent = %key, "wake: an earlier Resume is unaccounted for; waiting for it");
                let changes = Changes {
                    lease_until_ms: Some(until),
                    poll_until_ms: Some(0),
                    describe: Some(home.description()),
                    ..Changes::default()
                };
                return match lock.write(&mut held, changes).await? {
                    Written::Done(r) => Ok(WakeOutcome::Waking { record: r }),
                    Written::Lost(r) => Box::pin(self.follow(lock, target, r)).await,
                };
            }
        }

        // 4. Which snapshot.
        if home.retention == Retention::Temporary {
            self.give_back(lock, &mut held, &home).await;
            return Err(Error::NotWakeable(
                "a temporary agent cannot be woken once its session has ended".into(),
            ));
        }
        // Boxed: choosing, and waiting for, the snapshot keeps listings and choices alive across
        // awaits; inline they would make the holder's frame too large for a debug worker.
        let picked = Box::pin(self.pick_snapshot(
            lock,
            target,
            &mut held,
            &home,
            before.as_ref(),
            listed.take(),
        ))
        .await?;
        let (snapshot, listing) = match picked {
            Picked::Snapshot { snapshot, listing } => (snapshot, listing),
            Picked::Waiting(record) => return Ok(WakeOutcome::Waking { record }),
            Picked::Lost(record) => return Box::pin(self.follow(lock, target, record)).await,
        };
        let snapshot_id = snapshot.snapshot_id.clone().unwrap_or_default();

        // 5. Enough budget for one whole AgentKit request, or none is sent.
        if deadline.remaining() < self.agentkit.request_timeout() {
            self.give_back(lock, &mut held, &home).await;
            return Err(Error::Deferred {
                detail: "not enough time left in this request to wake the agent safely; retry"
                    .into(),
                retry_after_s: 1,
            });
        }

        // 6. Say a Resume is on its way before it is. The lease stays the short acquire lease
        // until Resume has answered (record_and_poll, hand_over extend it): a marker whose
        // Resume was never sent holds nobody up for long.
        let sent_at = now_ms();
        let changes = Changes {
            // The listing is current (taken under the lock): the index's copy of it.
            snapshots: Some(crate::view::snapshot_views(&own_snapshots(&listing, key))),
            resume_sent_at_ms: Some(Some(sent_at)),
            snapshot_id: Some(Some(snapshot_id.clone())),
            lease_until_ms: Some(
                (sent_at + self.settings.lock.lease.as_millis() as u64).max(deadline.epoch_ms()),
            ),
            poll_until_ms: Some(deadline.epoch_ms()),
            error: Some(None),
            describe: Some(described(&held.record, &home, &snapshot)),
            ..Changes::default()
        };
        match lock.write(&mut held, changes).await {
            Ok(Written::Done(_)) => {}
            Ok(Written::Lost(r)) => return Box::pin(self.follow(lock, target, r)).await,
            // The marker may or may not have landed, and no Resume was sent: take it back, so
            // nobody waits out a Resume that never was.
            Err(e) => {
                tracing::warn!(agent = %key, error = %e, "could not confirm the Resume marker; taking it back");
                Box::pin(self.take_back_marker(lock, &mut held, &home)).await;
                return Err(e.into());
            }
        }

        // 7. Resume.
        let request = ResumeSessionFromSnapshot::new(&home.tool_id, &snapshot_id);
        crate::metrics::emit(crate::metrics::Record::of("wake").count("ResumesSent", 1));
        let answer = self.agentkit.call(&home.region, &request, deadline).await;
        let session_id = match answer {
            Ok(r) if !r.session_id.is_empty() => r.session_id,
            Ok(_) => {
                tracing::warn!(agent = %key, "Resume answered no SessionId; its outcome is unknown");
                return Box::pin(self.unknown_resume(lock, target, held, &home, &listing)).await;
            }
            Err(e) if e.is_not_found() => {
                tracing::info!(agent = %key, %snapshot_id, "the snapshot vanished before Resume");
                self.give_back(lock, &mut held, &home).await;
                return Err(Error::NotWakeable(format!(
                    "snapshot {snapshot_id} no longer exists"
                )));
            }
            Err(e) if e.outcome_unknown() => {
                tracing::warn!(agent = %key, error = %e, "Resume may have acted; its outcome is unknown");
                return Box::pin(self.unknown_resume(lock, target, held, &home, &listing)).await;
            }
            Err(e) => return Err(self.fail(lock, &mut held, e.into()).await),
        };
        tracing::info!(agent = %key, %session_id, "wake: resumed");
        if target.user_session_id().is_none() {
            // Nothing in AgentKit says whose this session is: the claim does
            // (crate::locate::claims). A failed write only makes a later orphan search wait.
            if let Err(e) = crate::locate::claims::claim(self.store, &home, &session_id, key).await
            {
                tracing::warn!(agent = %key, error = %e, "could not claim the resumed session");
            }
        }
        let recorded = Recorded {
            session_id,
            snapshot_id: Some(snapshot_id),
            seen: None,
            resumed: true,
        };
        Box::pin(self.record_and_poll(lock, target, held, &home, recorded, listing)).await
    }

    /// Step 4: the snapshot to wake from (docs/wake-protocol.md, "AgentKit keeps its own
    /// time"). A newer snapshot still being made is waited for while a Resume could still be
    /// sent after it, then the agent is left `waking` (`SNAPSHOT_IN_PROGRESS`) for the next
    /// caller. Errors have given the lock back already.
    async fn pick_snapshot(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        held: &mut Held,
        home: &Home,
        before: Option<&crate::domain::AgentRecord>,
        listed: Option<Vec<Snapshot>>,
    ) -> Result<Picked, Error> {
        let deadline = lock.deadline();
        let key = &target.key;
        let mut listing = match listed {
            Some(l) => l,
            None => match snapshots(self.agentkit, home, key, deadline).await {
                Ok(l) => l,
                Err(e) => return Err(self.fail(lock, held, e.into()).await),
            },
        };
        let recorded = before.and_then(|b| b.snapshot_id.clone());
        let expected = self.expected_snapshot(before);
        let mut backoff = self.settings.polling();
        let mut waited = false;
        loop {
            let choice = choose(
                &listing,
                key,
                target.snapshot_id.as_deref(),
                recorded.as_deref(),
                expected.as_ref(),
                self.settings.snapshot_stuck_after,
                now_ms(),
            );
            match choice {
                // Ready at last, but too late in this request to send Resume: give the agent
                // back, so the next caller wakes it at once (202 meanwhile, not a 503).
                Choice::Wake { .. }
                    if waited && deadline.remaining() < self.agentkit.request_timeout() =>
                {
                    return match release_asleep(lock, held, home).await? {
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
                    let room = self.agentkit.request_timeout();
                    if !backoff.wait(deadline, room).await {
                        return self
                            .await_snapshot(lock, held, home, key, snapshot_id)
                            .await;
                    }
                    waited = true;
                    listing = match snapshots(self.agentkit, home, key, deadline).await {
                        Ok(l) => l,
                        Err(e) => return Err(self.fail(lock, held, e.into()).await),
                    };
                }
                Choice::Stuck { snapshot_id } => {
                    let err = Error::SnapshotStuck { snapshot_id };
                    return Err(self.fail(lock, held, err).await);
                }
                Choice::Unknown { status, .. } => {
                    self.give_back(lock, held, home).await;
                    return Err(Error::unknown_status("snapshot", Some(&status)));
                }
                Choice::Nothing => {
                    self.give_back(lock, held, home).await;
                    return Err(Error::NotWakeable(match &target.snapshot_id {
                        Some(id) => format!("snapshot {id} is not Ready or does not exist"),
                        None => "the agent has neither a live session nor a Ready snapshot".into(),
                    }));
                }
            }
        }
    }

    /// A session this wake's earlier holders started: by UserSessionId, or for an agent
    /// without one after an unknown Resume (`resume_sent_at`), the one unclaimed session it
    /// left (recognised by `metadata` too, when known).
    pub(super) async fn find_started(
        &self,
        home: &Home,
        target: &WakeTarget,
        resume_sent_at_ms: Option<u64>,
        metadata: &[crate::agentkit::types::MetadataEntry],
        deadline: crate::deadline::Deadline,
    ) -> Result<Option<Session>, Error> {
        match (target.user_session_id(), resume_sent_at_ms) {
            (Some(usid), _) => Ok(live_session(self.agentkit, home, usid, deadline).await?),
            (None, Some(sent)) => {
                // AgentKit writes whole seconds; allow for that and for clocks a little apart.
                let margin = self.settings.lock.skew_margin.as_millis() as u64 + 1000;
                crate::locate::claims::adopt_orphan(
                    self.store,
                    self.agentkit,
                    home,
                    &target.key,
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

    /// The lease once a Resume is on its way: the readiness timeout from `from_ms`, and never
    /// shorter than this request's own wait (the holder is still polling until then; a lease
    /// that ended first would hand its wake to another caller mid-poll).
    fn ready_lease_until(&self, from_ms: u64, deadline: crate::deadline::Deadline) -> u64 {
        let ready = from_ms + self.settings.ready_timeout.as_millis() as u64;
        ready.max(deadline.epoch_ms())
    }

    /// Record the session at once (fenced; lease extended to the readiness timeout), then poll
    /// it until Ready within the budget.
    pub(super) async fn record_and_poll(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        mut held: Held,
        home: &Home,
        recorded: Recorded,
        snapshots: Vec<Snapshot>,
    ) -> Result<WakeOutcome, Error> {
        let deadline = lock.deadline();
        let changes = Changes {
            session_id: Some(Some(recorded.session_id.clone())),
            snapshot_id: Some(recorded.snapshot_id.clone()),
            resume_sent_at_ms: Some(None),
            lease_until_ms: Some(self.ready_lease_until(now_ms(), deadline)),
            poll_until_ms: Some(deadline.epoch_ms()),
            describe: Some(home.description()),
            ..Changes::default()
        };
        let record = match lock.write(&mut held, changes).await? {
            Written::Done(r) => r,
            Written::Lost(r) => return Box::pin(self.follow(lock, target, r)).await,
        };
        let polled = Box::pin(self.poll_session(
            lock,
            Poller::Holder(&mut held),
            home,
            record,
            recorded.seen,
            recorded.resumed,
            snapshots,
            deadline,
        ))
        .await?;
        Ok(match polled {
            Polled::Awake(outcome) => outcome,
            Polled::Starting(record) => WakeOutcome::Waking { record },
        })
    }

    /// A Resume whose outcome is unknown: the lock stays held (its lease already covers the
    /// readiness timeout, `resume_sent_at` is recorded). A session that already shows up is
    /// adopted at once; otherwise pollers may look for it as soon as this request ends.
    async fn unknown_resume(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        held: Held,
        home: &Home,
        listing: &[Snapshot],
    ) -> Result<WakeOutcome, Error> {
        let metadata = snapshot_metadata(listing, held.record.snapshot_id.as_deref());
        let found = self
            .find_started(
                home,
                target,
                held.record.resume_sent_at_ms,
                &metadata,
                lock.deadline(),
            )
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(agent = %target.key, error = %e, "could not reconcile an unknown Resume yet");
                None
            });
        if let Some(s) = found {
            let recorded = Recorded {
                session_id: s.session_id.clone().unwrap_or_default(),
                snapshot_id: held.record.snapshot_id.clone(),
                seen: Some(s),
                resumed: true,
            };
            let snapshots = listing.to_vec();
            return Box::pin(self.record_and_poll(lock, target, held, home, recorded, snapshots))
                .await;
        }
        Box::pin(self.hand_over(lock, target, held)).await
    }

    /// Keep the lock, with its Resume unaccounted for, and let whoever asks next look for the
    /// session it started (a poll lease, `watch.rs`): this caller answers 202.
    async fn hand_over(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        mut held: Held,
    ) -> Result<WakeOutcome, Error> {
        // The record names the agent's Tool already (the write before the Resume did), so
        // pollers know where to look.
        let sent = held.record.resume_sent_at_ms.unwrap_or_else(now_ms);
        let changes = Changes {
            poll_until_ms: Some(0),
            lease_until_ms: Some(self.ready_lease_until(sent, lock.deadline())),
            ..Changes::default()
        };
        match lock.write(&mut held, changes).await {
            Ok(Written::Done(r)) => Ok(WakeOutcome::Waking { record: r }),
            Ok(Written::Lost(r)) => Box::pin(self.follow(lock, target, r)).await,
            Err(e) => {
                tracing::warn!(agent = %target.key, error = %e, "could not hand polling over");
                Ok(WakeOutcome::Waking {
                    record: held.record,
                })
            }
        }
    }

    /// The lock was lost (our lease ran out and somebody took the agent over): follow them.
    pub(super) async fn follow(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        record: Option<crate::domain::AgentRecord>,
    ) -> Result<WakeOutcome, Error> {
        let Some(record) = record else {
            return Err(Error::AgentNotFound);
        };
        match Box::pin(self.watch(lock, target, record, true)).await? {
            Watched::Done(outcome) => Ok(outcome),
            Watched::Again(r) => Ok(WakeOutcome::Waking {
                record: r.unwrap_or_else(|| crate::domain::AgentRecord::absent(target.key.clone())),
            }),
        }
    }

    /// Record a failed wake (the snapshot untouched, the agent wakeable) and hand back the
    /// error to answer.
    pub(super) async fn fail(&self, lock: &AgentLock<'_, S>, held: &mut Held, err: Error) -> Error {
        self.fail_on(lock, held, err, None).await
    }

    /// [`Self::fail`], and with `session_id` keep that session on the failed record: the next
    /// wake looks at it first (a stuck one is ended, an unknown one asked about again), never
    /// beside it.
    async fn fail_on(
        &self,
        lock: &AgentLock<'_, S>,
        held: &mut Held,
        err: Error,
        session_id: Option<&str>,
    ) -> Error {
        let reason = err.to_string();
        tracing::warn!(agent = %held.key, %reason, "wake failed");
        let changes = Changes {
            error: Some(Some(recorded_failure(Problem::from(&err).code, &reason))),
            resume_sent_at_ms: Some(None),
            session_id: session_id.map(|s| Some(s.to_string())),
            ..Changes::default()
        };
        if let Err(e) = lock.release(held, WakeState::Failed, changes).await {
            tracing::warn!(agent = %held.key, error = %e, "could not record the failed wake");
        }
        err
    }

    /// The Resume marker's write could not be confirmed and no Resume was sent: give the agent
    /// back with no marker (a few tries: the store has just failed once). If even that fails,
    /// the record keeps at most the short acquire lease.
    async fn take_back_marker(&self, lock: &AgentLock<'_, S>, held: &mut Held, home: &Home) {
        for attempt in 0..3u32 {
            match release_asleep(lock, held, home).await {
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(agent = %held.key, error = %e, attempt, "could not take the Resume marker back");
                    let pause = self.settings.watch_min * (attempt + 1);
                    if !lock.deadline().allows(pause) {
                        return;
                    }
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }

    /// The snapshot to wake from is still being made, and this request's budget ends: the agent
    /// stays `waking` (reason `SNAPSHOT_IN_PROGRESS`) until this request ends, and whoever
    /// asks after that looks again (202 meanwhile).
    async fn await_snapshot(
        &self,
        lock: &AgentLock<'_, S>,
        held: &mut Held,
        home: &Home,
        key: &crate::domain::AgentKey,
        snapshot_id: Option<String>,
    ) -> Result<Picked, Error> {
        let deadline = lock.deadline();
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
            lease_until_ms: Some(deadline.epoch_ms().max(now_ms())),
            poll_until_ms: Some(deadline.epoch_ms()),
            describe: Some(home.description()),
            ..Changes::default()
        };
        match lock.write(held, changes).await? {
            Written::Done(r) => Ok(Picked::Waiting(r)),
            Written::Lost(r) => Ok(Picked::Lost(r)),
        }
    }

    /// End a session that stayed starting past its readiness timeout, and confirm it is gone
    /// before anything is resumed beside it.
    async fn end_stuck(
        &self,
        home: &Home,
        session_id: &str,
        deadline: crate::deadline::Deadline,
    ) -> Result<(), Error> {
        tracing::warn!(
            session_id,
            "wake: ending a session stuck starting before resuming again"
        );
        let request = DeleteSession {
            tool_id: home.tool_id.clone(),
            session_id: session_id.to_string(),
        };
        match self.agentkit.call(&home.region, &request, deadline).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        match session(self.agentkit, home, session_id, deadline).await? {
            None => Ok(()),
            Some(s) if s.phase() == SessionPhase::Ended => Ok(()),
            Some(_) => Err(Error::SessionStuck(format!(
                "session {session_id} is being ended; it was still starting after the readiness timeout"
            ))),
        }
    }

    /// The snapshot of the agent's last session, when that session expired less than the
    /// snapshot grace ago on a recoverable Tool: AgentKit may not list it yet.
    fn expected_snapshot(&self, before: Option<&crate::domain::AgentRecord>) -> Option<Expected> {
        let before = before?;
        let session_id = before.session_id.clone()?;
        let expired = before
            .session_expire_at
            .as_deref()
            .and_then(crate::timestamp::epoch_ms)?;
        let now = now_ms();
        let skew = self.settings.lock.skew_margin.as_millis() as u64;
        let grace = self.settings.snapshot_grace.as_millis() as u64;
        // Only a session that ended by expiring: one ended early (deleted, stopped) leaves none.
        (expired <= now + skew && now < expired + grace).then_some(Expected { session_id })
    }

    /// A reconcile that could not finish. A Resume still unaccounted for (`resume_sent_at`)
    /// is never written off by the failure of something else (a listing that failed while
    /// looking for its session), nor answered as a failure: its outcome is as unknown as
    /// before, so the lock is kept and handed over like the holder's own unknown Resume, and
    /// the caller gets 202 (docs/wake-protocol.md, "A wake, step by step"). Without one, this
    /// is a failed wake like any other.
    async fn interrupted(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        mut held: Held,
        err: Error,
    ) -> Result<WakeOutcome, Error> {
        if held.record.resume_sent_at_ms.is_none() {
            return Err(self.fail(lock, &mut held, err).await);
        }
        tracing::warn!(agent = %held.key, error = %err, "reconcile failed; an earlier Resume is still unaccounted for, handing polling over");
        Box::pin(self.hand_over(lock, target, held)).await
    }

    /// Give the lock back with nothing woken: the agent rests asleep.
    async fn give_back(&self, lock: &AgentLock<'_, S>, held: &mut Held, home: &Home) {
        if let Err(e) = release_asleep(lock, held, home).await {
            tracing::warn!(agent = %held.key, error = %e, "could not give the lock back");
        }
    }
}

/// Where the agent lives, and the names its snapshot carries when the record has none yet (an
/// agent first met asleep): every answer read from the record then names it as a listing
/// would.
fn described(record: &crate::domain::AgentRecord, home: &Home, snapshot: &Snapshot) -> Description {
    let from_metadata =
        |key: &str| metadata_value(&snapshot.session_metadata, key).map(str::to_string);
    Description {
        display_name: record
            .description
            .display_name
            .is_none()
            .then(|| from_metadata(METADATA_DISPLAY_NAME_KEY))
            .flatten(),
        created_by: record
            .description
            .created_by
            .is_none()
            .then(|| from_metadata(METADATA_CREATOR_KEY))
            .flatten(),
        ..home.description()
    }
}

/// Give the lock back with nothing woken and no Resume on its way: the agent rests asleep where
/// `home` says it lives.
async fn release_asleep<S: AgentStore>(
    lock: &AgentLock<'_, S>,
    held: &mut Held,
    home: &Home,
) -> Result<Written, crate::store::StoreError> {
    let changes = Changes {
        resume_sent_at_ms: Some(None),
        describe: Some(home.description()),
        ..Changes::default()
    };
    lock.release(held, WakeState::Asleep, changes).await
}

/// What step 4 came to.
#[allow(clippy::large_enum_variant)] // made once per wake, consumed at once
pub(super) enum Picked {
    /// Wake from this snapshot; `listing` is the agent's snapshots as just listed.
    Snapshot {
        snapshot: Snapshot,
        listing: Vec<Snapshot>,
    },
    /// The snapshot is still being made: the agent is left waking, this record says so.
    Waiting(crate::domain::AgentRecord),
    /// The lock was lost meanwhile: follow whoever has it.
    Lost(Option<crate::domain::AgentRecord>),
}

/// The previous generation left a session that should have been ready by now: a wake whose
/// readiness lease lapsed (this caller could acquire over it), or one already recorded stuck.
fn was_stuck(before: Option<&crate::domain::AgentRecord>) -> bool {
    before.is_some_and(|b| {
        b.state == WakeState::Waking
            || (b.state == WakeState::Failed
                && b.error.as_deref().and_then(recorded_code) == Some(SESSION_STUCK))
    })
}

/// The metadata of the snapshot a Resume was sent for (to recognise its session later).
pub(super) fn snapshot_metadata(
    listing: &[Snapshot],
    snapshot_id: Option<&str>,
) -> Vec<crate::agentkit::types::MetadataEntry> {
    listing
        .iter()
        .find(|s| s.snapshot_id.as_deref() == snapshot_id && snapshot_id.is_some())
        .map(|s| s.session_metadata.clone())
        .unwrap_or_default()
}
