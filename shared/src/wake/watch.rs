//! Everyone but the holder: joiners watch the record, not AgentKit (docs/wake-protocol.md, "A wake,
//! step by step"). A joiner answers from the record: awake → 200 with the recorded session; failed (the wake
//! it joined) → 502; anything else → decide again. One caller at a time asks AgentKit about a
//! wake: the holder until its own wait ends (the record's `poll_until_ms` says when), then
//! whichever caller wins the poll lease (a CAS on the version it saw), which is never shorter
//! than the pause between two polls ([`crate::deadline::Pace`]). The poller completes or fails
//! the wake *by anyone*; after an unknown Resume it first looks for the session the Resume
//! started and records it (a CAS too), but never sends a Resume itself.
//!
//! A short request (no `Prefer: wait`, docs/wake-protocol.md, "Short requests") asks AgentKit
//! once if the poll lease is free, and otherwise answers 202 at once: a storm's callers come
//! back after `Retry-After` instead of holding a function while the sandbox boots. A caller
//! that may wait re-reads the record (consistent read, backoff 0.25 s → 1 s) until its wait
//! ends. Only a check of an awake record in flight (another caller's single GetSession) is
//! waited for by everyone, so that nobody answers 202 for an agent that is awake.
//!
//! An `awake` record that was not verified lately is checked the same way: one caller wins a
//! poll lease and asks GetSession once; the others wait for its verdict (a fresh
//! `verified_at_ms`, or a new wake if the session had ended). The poll lease is written
//! before the check, and the verification after it: were the check's own write the
//! verification, a caller arriving in between would answer with a session that had in fact
//! ended (the spec's single write, reordered for exactly that case; docs/wake-protocol.md).

use crate::agentkit::types::{Session, Snapshot};
use crate::agentkit::AgentKit;
use crate::deadline::Deadline;
use crate::domain::failure::{recorded_failure, SESSION_ENDED};
use crate::domain::{AgentRecord, Announce, SessionPhase, WakeState};
use crate::error::Error;
use crate::lock::{decide, Acquired, AgentLock, Decision, Held, Written};
use crate::sleep::Finished;
use crate::store::{AgentStore, Changes, Condition};
use crate::timestamp::now_ms;
use std::time::Duration;

use super::{from_record, Wake, WakeOutcome, WakeTarget};
use crate::locate::sessions::session;
use crate::locate::{home_of, Home};

/// `record` as the completing write would have left it (for an answer, when that write could
/// not be made).
fn as_completed(mut record: AgentRecord, changes: &Changes) -> AgentRecord {
    record.state = WakeState::Awake;
    record.holder = None;
    record.lease_until_ms = 0;
    record.poll_until_ms = 0;
    record.error = None;
    record.resume_sent_at_ms = None;
    if let Some(expire) = &changes.session_expire_at {
        record.session_expire_at.clone_from(expire);
    }
    record
}

/// The end of a watch of a wake in flight.
pub(super) type Watched = crate::lock::Watched<WakeOutcome>;

/// Who polls: the holder writes fenced, anyone else writes by anyone.
pub(super) enum Poller<'h> {
    Holder(&'h mut Held),
    Anyone,
}

/// What polling found within its time.
#[allow(clippy::large_enum_variant)] // returned once, consumed at once
pub(super) enum Polled {
    Awake(WakeOutcome),
    Starting(AgentRecord),
}

impl<S: AgentStore, K: AgentKit> Wake<'_, S, K> {
    /// Watch the record until there is an answer, the budget ends (202), or there is nothing
    /// left to wait for. `joined`: the caller joined a wake (its answer says `resumed`).
    pub(super) async fn watch(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        record: AgentRecord,
        joined: bool,
    ) -> Result<Watched, Error> {
        let deadline = lock.deadline();
        let wait = lock.wait();
        let mut joined_fence = joined.then_some(record.fence);
        let mut backoff = self.settings.watching();
        let mut current = Some(record);
        loop {
            let Some(r) = current.take() else {
                // The record vanished under a wake: its holder found nothing of the agent.
                return if joined_fence.is_some() {
                    Err(Error::AgentNotFound)
                } else {
                    Ok(Watched::Again(None))
                };
            };
            if r.state == WakeState::Failed && joined_fence == Some(r.fence) {
                return Err(Error::WakeFailed(
                    r.error.unwrap_or_else(|| "the wake failed".into()),
                ));
            }
            // The wake this caller watched has completed: its answer, however old the record.
            if r.state == WakeState::Awake
                && r.session_id.is_some()
                && joined_fence == Some(r.fence)
            {
                return Ok(Watched::Done(from_record(r, true)));
            }
            let now = now_ms();
            // How long this round may wait: the caller's wait, or for a check of an awake
            // agent in flight, until that check's lease ends (it is one GetSession).
            let mut until = wait;
            match decide(Some(&r), now, self.settings.intent(), &self.settings.lock) {
                Decision::Awake => {
                    return Ok(Watched::Done(from_record(r, joined_fence.is_some())))
                }
                Decision::AwaitVerify => {
                    let check_ends =
                        Deadline::after(Duration::from_millis(r.poll_until_ms.saturating_sub(now)));
                    until = wait.max(check_ends.min(deadline));
                }
                // A sleep whose holder's request has ended is carried on by whoever wins its
                // poll lease, a wake included; once it settles, the wake decides again.
                Decision::AwaitSleep => {
                    if let Some(home) = self.home_of_record(target, &r) {
                        let sleep_settings = self.settings.sleep();
                        let carried =
                            crate::sleep::carry_on(lock, self.agentkit, &sleep_settings, &home, &r);
                        let finished = Box::pin(carried).await?;
                        if finished.is_some_and(|f| !matches!(f, Finished::Pending(_))) {
                            // Settled: decide again from what it left.
                            current = lock.read(&target.key).await?;
                            continue;
                        }
                    }
                }
                Decision::Join => {
                    // Follow whichever wake is in flight (a takeover bumps the fence).
                    joined_fence = Some(r.fence);
                    // Whoever finds the poller gone asks, short request or not.
                    let poller_gone = !self.settings.lock.poll_lease_holds(r.poll_until_ms, now);
                    if poller_gone {
                        let polled = Box::pin(self.take_over_polling(lock, target, &r)).await?;
                        if let Some(outcome) = polled {
                            return Ok(Watched::Done(outcome));
                        }
                    }
                }
                _ => return Ok(Watched::Again(Some(r))),
            }
            if !backoff.wait(until, Duration::ZERO).await {
                return Ok(Watched::Done(WakeOutcome::Waking { record: r }));
            }
            current = lock.read(&target.key).await?;
            if current.is_none() && joined_fence.is_none() {
                return Ok(Watched::Again(None));
            }
        }
    }

    /// Win the poll lease of a wake whose poller is gone, and poll it: once, then on until
    /// this caller's wait ends (at most a poll lease). The lease covers this caller's own calls
    /// (one AgentKit request timeout at least), so only one caller at a time asks; when it is
    /// done without an answer it hands the lease on for the pace's pause, so however many
    /// callers come, AgentKit is asked at the pace one poller would ask.
    async fn take_over_polling(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        seen: &AgentRecord,
    ) -> Result<Option<WakeOutcome>, Error> {
        let deadline = lock.deadline();
        let now = now_ms();
        let polling = self.settings.poll_lease.min(lock.wait().remaining());
        let until = lock.wait().min_after(polling);
        let covering = polling.max(self.agentkit.request_timeout());
        let until_ms = now + covering.as_millis() as u64;
        let record = match lock.take_poll_lease(seen, until_ms).await? {
            Written::Done(r) => r,
            Written::Lost(_) => return Ok(None),
        };
        let Some(home) = self.home_of_record(target, &record) else {
            self.hand_poll_on(lock, &record).await;
            return Ok(None);
        };
        let record = match (&record.session_id, record.resume_sent_at_ms) {
            (Some(_), _) => record,
            (None, Some(sent)) => {
                // An unknown Resume: find the session it started (never send another).
                let found = match self
                    .find_started(&home, target, Some(sent), &[], deadline)
                    .await
                {
                    Ok(f) => f,
                    Err(e) => {
                        tracing::info!(agent = %target.key, error = %e, "poller could not reconcile yet");
                        None
                    }
                };
                let Some(s) = found else {
                    self.hand_poll_on(lock, &record).await;
                    return Ok(None);
                };
                let changes = Changes {
                    session_id: Some(s.session_id.clone()),
                    resume_sent_at_ms: Some(None),
                    awaited_since_ms: Some(now_ms()),
                    ..Changes::default()
                };
                match lock.write_seen(&record, changes).await? {
                    Written::Done(r) => {
                        tracing::info!(agent = %target.key, "poller recorded the session of an unknown Resume");
                        return Box::pin(self.poll_until(lock, &home, r, Some(s), until)).await;
                    }
                    Written::Lost(_) => return Ok(None),
                }
            }
            // The holder died before it sent anything: its lease will lapse.
            (None, None) => {
                self.hand_poll_on(lock, &record).await;
                return Ok(None);
            }
        };
        Box::pin(self.poll_until(lock, &home, record, None, until)).await
    }

    /// Poll as the winner of the poll lease until `until`; still starting, hand the lease on.
    async fn poll_until(
        &self,
        lock: &AgentLock<'_, S>,
        home: &Home,
        record: AgentRecord,
        seen: Option<Session>,
        until: Deadline,
    ) -> Result<Option<WakeOutcome>, Error> {
        let polled = Box::pin(self.poll_session(
            lock,
            Poller::Anyone,
            home,
            record,
            seen,
            true,
            Vec::new(),
            until,
        ))
        .await?;
        Ok(match polled {
            Polled::Awake(outcome) => Some(outcome),
            Polled::Starting(record) => {
                self.hand_poll_on(lock, &record).await;
                None
            }
        })
    }

    /// Let the next poller in one pause of the pace from now: this caller's poll lease covered
    /// its own calls, which are over.
    pub(super) async fn hand_poll_on(
        &self,
        lock: &AgentLock<'_, S>,
        record: &AgentRecord,
    ) -> AgentRecord {
        let now = now_ms();
        let gap = self.settings.pace().gap(record.awaited_since_ms, now);
        lock.hand_poll_lease_on(record, now + gap.as_millis() as u64)
            .await
    }

    /// Check an awake record's session once, as the winner of its poll lease.
    pub(super) async fn verify(
        &self,
        lock: &AgentLock<'_, S>,
        target: &WakeTarget,
        seen: AgentRecord,
    ) -> Result<Watched, Error> {
        let deadline = lock.deadline();
        let lease = self.settings.poll_lease.min(deadline.remaining());
        let record = match lock
            .take_poll_lease(&seen, now_ms() + lease.as_millis() as u64)
            .await?
        {
            Written::Done(r) => r,
            Written::Lost(r) => return Ok(Watched::Again(r)),
        };
        let found = match (self.home_of_record(target, &record), &record.session_id) {
            (Some(home), Some(id)) => session(self.agentkit, &home, id, deadline).await?,
            _ => None,
        };
        match found {
            // Nobody knows what it is doing: never wake beside it.
            Some(s) if s.phase() == SessionPhase::Unknown => {
                if let Err(e) = lock
                    .write_seen(
                        &record,
                        Changes {
                            poll_until_ms: Some(0),
                            ..Changes::default()
                        },
                    )
                    .await
                {
                    tracing::info!(agent = %target.key, error = %e, "could not give the poll lease back");
                }
                Err(Error::unknown_status("session", s.status.as_deref()))
            }
            Some(s) if s.is_active() => {
                let changes = Changes {
                    verified_at_ms: s.is_usable().then(now_ms),
                    session_expire_at: s.expire_at.clone().map(Some),
                    poll_until_ms: Some(0),
                    ..Changes::default()
                };
                let record = match lock.write_seen(&record, changes).await {
                    Ok(Written::Done(r)) => r,
                    _ => record,
                };
                Ok(Watched::Done(WakeOutcome::Awake {
                    session: s,
                    resumed: false,
                    record,
                    snapshots: Vec::new(),
                }))
            }
            // Ended: this caller wakes it again, in the same call.
            _ => {
                tracing::info!(agent = %target.key, "wake: the recorded session has ended");
                let condition = Condition::Version(record.version);
                match self
                    .acquire(lock, target, &condition, Some(&record))
                    .await?
                {
                    Acquired::Held(held) => Ok(Watched::Done(
                        Box::pin(self.hold(lock, target, *held, true)).await?,
                    )),
                    Acquired::Lost(r) => Ok(Watched::Again(r)),
                }
            }
        }
    }

    /// Poll the recorded session until it is Ready (complete), ended (fail) or `until`: at
    /// least once (a short request asks once), each call within the request's deadline, the
    /// pauses at the record's pace.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn poll_session(
        &self,
        lock: &AgentLock<'_, S>,
        mut poller: Poller<'_>,
        home: &Home,
        record: AgentRecord,
        mut seen: Option<Session>,
        resumed: bool,
        snapshots: Vec<Snapshot>,
        until: Deadline,
    ) -> Result<Polled, Error> {
        let Some(session_id) = record.session_id.clone() else {
            return Ok(Polled::Starting(record));
        };
        let pace = self.settings.pace();
        loop {
            let observed = match seen.take() {
                Some(s) => Ok(Some(s)),
                None => session(self.agentkit, home, &session_id, lock.deadline()).await,
            };
            match observed {
                Ok(Some(s)) if s.is_usable() => {
                    let changes = Changes {
                        state: Some(WakeState::Awake),
                        announce: Some(Announce::Awake),
                        holder: Some(None),
                        lease_until_ms: Some(0),
                        poll_until_ms: Some(0),
                        error: Some(None),
                        resume_sent_at_ms: Some(None),
                        session_expire_at: Some(s.expire_at.clone()),
                        verified_at_ms: Some(now_ms()),
                        ..Changes::default()
                    };
                    let written = self
                        .settle(lock, &mut poller, &record, &session_id, changes.clone())
                        .await;
                    let record = match written {
                        Ok(Written::Done(r)) => r,
                        // Somebody else completed this wake meanwhile.
                        Ok(Written::Lost(Some(r)))
                            if r.state == WakeState::Awake
                                && r.session_id.as_deref() == Some(session_id.as_str()) =>
                        {
                            r
                        }
                        // The record could not say so (the table is away, or another caller
                        // took a lapsed lease): the session is Ready all the same, and the
                        // answer says what this caller saw. The next caller reconciles.
                        other => {
                            if let Err(e) = other {
                                tracing::warn!(agent = %record.key, error = %e, "could not record the completed wake");
                            }
                            as_completed(record, &changes)
                        }
                    };
                    return Ok(Polled::Awake(WakeOutcome::Awake {
                        session: s,
                        resumed,
                        record,
                        snapshots,
                    }));
                }
                Ok(Some(s)) if s.phase() == SessionPhase::Starting => {}
                // A status nobody documented: the wake fails (retryable) with the session
                // recorded, so the next wake asks about it again rather than start another.
                Ok(Some(s)) if s.phase() == SessionPhase::Unknown => {
                    let err = Error::unknown_status("session", s.status.as_deref());
                    let code = crate::http::problem::Problem::from(&err).code;
                    let reason = err.to_string();
                    let failed =
                        self.settle_failed(lock, &mut poller, &record, &session_id, code, &reason);
                    Box::pin(failed).await;
                    return Err(err);
                }
                Ok(ended) => {
                    let status = ended
                        .and_then(|s| s.status)
                        .unwrap_or_else(|| "gone".into());
                    let reason = format!("the resumed session ended ({status})");
                    tracing::warn!(agent = %record.key, %reason, "wake failed");
                    let failed = self.settle_failed(
                        lock,
                        &mut poller,
                        &record,
                        &session_id,
                        SESSION_ENDED,
                        &reason,
                    );
                    Box::pin(failed).await;
                    return Err(Error::WakeFailed(reason));
                }
                // AgentKit did not answer this time: the next poll may (within the budget).
                Err(e) => {
                    tracing::info!(agent = %record.key, error = %e, "readiness poll failed; polling on")
                }
            }
            let gap = pace.gap(record.awaited_since_ms, now_ms());
            if !until.allows(gap) {
                return Ok(Polled::Starting(record));
            }
            tokio::time::sleep(gap).await;
        }
    }

    /// Record the wake of `record`'s session failed (`code: reason`), as [`Self::settle`] does;
    /// a failure to write is logged (the lease lapses by itself).
    async fn settle_failed(
        &self,
        lock: &AgentLock<'_, S>,
        poller: &mut Poller<'_>,
        record: &AgentRecord,
        session_id: &str,
        code: &str,
        reason: &str,
    ) {
        let changes = Changes {
            state: Some(WakeState::Failed),
            announce: Some(Announce::WakeFailed),
            holder: Some(None),
            lease_until_ms: Some(0),
            poll_until_ms: Some(0),
            error: Some(Some(recorded_failure(code, reason))),
            resume_sent_at_ms: Some(None),
            ..Changes::default()
        };
        if let Err(e) = self.settle(lock, poller, record, session_id, changes).await {
            tracing::warn!(agent = %record.key, error = %e, "could not record the failed wake");
        }
    }

    /// Complete or fail: fenced for the holder, by anyone for the others.
    async fn settle(
        &self,
        lock: &AgentLock<'_, S>,
        poller: &mut Poller<'_>,
        record: &AgentRecord,
        session_id: &str,
        changes: Changes,
    ) -> Result<Written, crate::store::StoreError> {
        match poller {
            Poller::Holder(held) => lock.write(held, changes).await,
            Poller::Anyone => {
                lock.settle_by_anyone(&record.key, record.fence, session_id, changes)
                    .await
            }
        }
    }

    /// Where the agent lives, from the caller or the record.
    pub(super) fn home_of_record(&self, target: &WakeTarget, record: &AgentRecord) -> Option<Home> {
        target
            .home
            .clone()
            .or_else(|| home_of(self.registry, record))
    }
}
