//! The wake (docs/wake-protocol.md): wake an agent exactly once however many callers ask, and
//! survive a caller dying at any step without a second Resume or a lost snapshot.
//!
//! In this file, top to bottom: the wake every caller runs (decide, acquire, watch, poll), then
//! the winner's path ("A wake, step by step"), numbered as there, with its steps 2 (reconcile)
//! and 4 (which snapshot) last. Every step after the acquire is a fenced write, so a holder
//! stopped anywhere leaves a record the next caller finishes without a second Resume.
//! Ambiguity is never failure: a Resume of unknown outcome keeps the lock until the readiness
//! timeout (202 meanwhile).
//!
//! One protocol, read top to bottom, so one file over the 500-line rule (`shared/tests/layers.rs`).

use crate::agentkit::types::{
    metadata_value, DeleteSession, MetadataEntry, ResumeSessionFromSnapshot, Session, Snapshot,
};
use crate::agentkit::AgentKit;
use crate::domain::failure::{
    is_definite, recorded_code, recorded_failure, SESSION_ENDED, SESSION_STUCK,
    SNAPSHOT_IN_PROGRESS,
};
use crate::domain::{
    AgentKey, AgentRecord, Announce, Description, Retention, SessionPhase, WakeState,
};
use crate::error::Error;
use crate::identity::caller::METADATA_DISPLAY_NAME_KEY;
use crate::invocation::{Budget, Deadline};

use crate::ambient::now_ms;
use crate::locate::{live_session, own_snapshots, session, snapshots, Home};
use crate::lock::agent::{Agents, Driver, Look, Polled, Progress, Settler, Step};
use crate::lock::{Acquired, Decision, Generation, Held, Intent, Written};
pub use crate::lock::{IdlePolicy, WakeSettings, MIN_TTL};
use crate::offboarding::Admitted;
use crate::sleep::SleepOutcome;
use crate::store::{AgentStore, Changes, Condition};
use crate::view::METADATA_CREATOR_KEY;
use crate::view::{choose, Choice, Expected};
use std::ops::ControlFlow;
use std::time::Duration;

/// What to wake, resolved by the caller (the resume handler, a tick) beforehand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WakeTarget {
    pub key: AgentKey,
    /// Where the agent lives, when the record says; otherwise the winner locates it.
    pub home: Option<Home>,
    /// The snapshot the caller asked for; default the newest Ready one.
    pub snapshot_id: Option<String>,
    pub describe: Description,
    /// The agent's owner is not being offboarded.
    pub admitted: Admitted,
}

impl WakeTarget {
    /// The agent's UserSessionId (`None` for `snapshot-<id>` agents).
    pub fn user_session_id(&self) -> Option<&str> {
        crate::identity::user_session_id(&self.key.agent_id)
    }
}

/// How a wake ended for this caller.
#[allow(clippy::large_enum_variant)] // returned once per request, consumed at once
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WakeOutcome {
    /// A live session; `resumed` unless it was already awake.
    Awake {
        session: Session,
        resumed: bool,
        record: AgentRecord,
        /// The agent's snapshots, when this caller listed them (the holder of a wake).
        snapshots: Vec<Snapshot>,
    },
    /// Still waking at the end of this caller's budget; a later call continues from the record.
    Waking { record: AgentRecord },
}

impl<S: AgentStore, K: AgentKit> Agents<'_, S, K> {
    /// Ensure `target` is awake, deciding from `record` (the caller's consistent read).
    pub async fn wake(
        &self,
        target: &WakeTarget,
        record: Option<AgentRecord>,
        budget: Budget,
    ) -> Result<WakeOutcome, Error> {
        let waking = Waking {
            agents: self,
            target,
            driver: self.driver(&target.key, target.home.clone(), budget),
        };
        waking.run(record).await
    }
}

struct Waking<'w, 'a, S, K> {
    agents: &'w Agents<'a, S, K>,
    target: &'w WakeTarget,
    driver: Driver<'w, S>,
}

/// What a step of the wake came to: an answer, or a record to decide from again.
type Next = ControlFlow<WakeOutcome, Option<AgentRecord>>;

impl<S: AgentStore, K: AgentKit> Waking<'_, '_, S, K> {
    /// The wake (docs/wake-protocol.md, "A wake, step by step"):
    ///
    /// 1. A wake of the same snapshot that failed moments ago is the answer, not a second try.
    /// 2. Decide from the record ([`crate::lock::agent`]), a few rounds at most:
    ///    - a tombstone: 410; another operation holds the agent: 409 with `Retry-After`;
    ///    - awake and seen alive moments ago: answered from the record;
    ///    - nobody holds it: acquire and **hold** it through the wake ([`holder`]);
    ///    - awake, not seen alive lately: **verify** it (one caller asks GetSession);
    ///    - a sleep in flight: **wait for the sleep**, then decide again;
    ///    - a wake or a check in flight: **watch** it, polling once its poller is gone.
    /// 3. Out of rounds (every CAS lost): 409.
    async fn run(&self, mut record: Option<AgentRecord>) -> Result<WakeOutcome, Error> {
        let driver = &self.driver;
        if let Some(error) = driver.recent(record.as_ref()).and_then(|r| self.failed(r)) {
            return Err(error);
        }
        let mut joined = false;
        for _ in driver.rounds() {
            let decision = driver.decide(record.as_ref(), self.intent());
            let next = match decision {
                Decision::Gone => return Err(Error::AgentGone),
                Decision::Busy {
                    state,
                    retry_after_s,
                } => return Err(Error::held_by(state, retry_after_s)),
                Decision::Awake => return Ok(from_record(driver.seen(record), joined)),
                Decision::Acquire(condition) => {
                    match self.acquire(&condition, record.as_ref()).await? {
                        // Boxed: the holder's path is a large future.
                        Acquired::Held(held) => return Box::pin(self.hold(*held, false)).await,
                        Acquired::Lost(r) => Next::Continue(r),
                    }
                }
                Decision::Verify => self.verify(driver.seen(record.take())).await?,
                Decision::AwaitSleep => self.await_sleep(driver.seen(record.take())).await?,
                Decision::Join | Decision::AwaitVerify => {
                    let joins = decision == Decision::Join;
                    if joins && !joined {
                        // A caller that joins a wake in flight is a Resume it did not send.
                        crate::invocation::emit(
                            crate::invocation::Metric::of("wake").count("WakesJoined", 1),
                        );
                    }
                    joined |= joins;
                    self.watch(driver.seen(record.take()), joined).await?
                }
            };
            match next {
                Next::Break(outcome) => return Ok(outcome),
                Next::Continue(r) => record = r,
            }
        }
        Err(driver.too_busy())
    }

    fn intent(&self) -> Intent {
        Intent::Wake {
            verify_fresh: self.agents.settings.verify_fresh,
        }
    }

    async fn acquire(
        &self,
        condition: &Condition,
        seen: Option<&AgentRecord>,
    ) -> Result<Acquired, Error> {
        let how = (WakeState::Waking, Generation::New);
        let describe = &self.target.describe;
        let acquired = self.driver.acquire(how, describe, condition, seen);
        Ok(acquired.await?)
    }

    /// A recent failure answers its pollers, unless this names another snapshot or was throttled.
    fn failed(&self, r: &AgentRecord) -> Option<Error> {
        let same = self.target.snapshot_id.is_none() || self.target.snapshot_id == r.snapshot_id;
        let error = r.error.as_ref().filter(|e| is_definite(e))?;
        (r.state == WakeState::Failed && same).then(|| Error::WakeFailed(error.clone()))
    }

    /// Watch the record until the wake ends or the wait is over (202).
    async fn watch(&self, record: AgentRecord, joined: bool) -> Result<Next, Error> {
        let driver = &self.driver;
        let mut watch = driver.watch(record, joined, self.intent());
        loop {
            match watch.next(driver).await? {
                Step::Ended(r) => {
                    return match r.state {
                        WakeState::Failed => Err(Error::WakeFailed(
                            r.error.unwrap_or_else(|| "the wake failed".into()),
                        )),
                        // The watched wake completed: its answer, however old the record.
                        WakeState::Awake if r.session_id.is_some() => {
                            Ok(Next::Break(from_record(r, true)))
                        }
                        _ => Ok(Next::Continue(Some(r))),
                    };
                }
                Step::Awake(r) => return Ok(Next::Break(from_record(r, watch.joined()))),
                Step::InFlight(record) => return Ok(Next::Break(WakeOutcome::Waking { record })),
                Step::Again(r) => return Ok(Next::Continue(r)),
                Step::Poll {
                    record,
                    home,
                    polling,
                } => {
                    let Some((record, seen)) = self.prepare(&home, &record).await? else {
                        driver.hand_poll_on(&record).await;
                        continue;
                    };
                    let until = driver.wait().min_after(polling);
                    let polled = driver.poll(self, Settler::Anyone, &home, record, seen, until);
                    if let Polled::Settled { record, seen } = polled.await? {
                        return Ok(Next::Break(WakeOutcome::Awake {
                            session: seen,
                            resumed: true,
                            record,
                            snapshots: Vec::new(),
                        }));
                    }
                }
            }
        }
    }

    /// Before polling a lost-answer Resume, record the session it started (never send another).
    async fn prepare(
        &self,
        home: &Home,
        record: &AgentRecord,
    ) -> Result<Option<(AgentRecord, Option<Session>)>, Error> {
        let sent = match (&record.session_id, record.resume_sent_at_ms) {
            (Some(_), _) => return Ok(Some((record.clone(), None))),
            (None, Some(sent)) => sent,
            (None, None) => return Ok(None),
        };
        let found = self
            .find_started(home, Some(sent), &[], self.driver.deadline())
            .await
            .unwrap_or_else(|e| {
                tracing::info!(agent = %record.key, error = %e, "poller could not reconcile yet");
                None
            });
        let Some(s) = found else { return Ok(None) };
        let changes = Changes {
            session_id: Some(s.session_id.clone()),
            resume_sent_at_ms: Some(None),
            awaited_since_ms: Some(now_ms()),
            ..Changes::default()
        };
        Ok(match self.driver.lock.write_seen(record, changes).await? {
            Written::Done(r) => {
                tracing::info!(agent = %record.key, "poller recorded the session of an unknown Resume");
                Some((r, Some(s)))
            }
            Written::Lost(_) => None,
        })
    }

    /// An `awake` record not verified lately: one caller asks GetSession under a poll lease. Its
    /// verdict is written after the check, lest another answer with an ended session.
    async fn verify(&self, seen: AgentRecord) -> Result<Next, Error> {
        let driver = &self.driver;
        let deadline = driver.deadline();
        let until_ms = deadline
            .min_after(self.agents.settings.poll_lease)
            .epoch_ms();
        let record = match driver.lock.take_poll_lease(&seen, until_ms).await? {
            Written::Done(r) => r,
            Written::Lost(r) => return Ok(Next::Continue(r)),
        };
        let found = match (driver.home(&record), &record.session_id) {
            (Some(home), Some(id)) => session(self.agents.agentkit, &home, id, deadline).await?,
            _ => None,
        };
        match found {
            // Nobody knows what it is doing: never wake beside it.
            Some(s) if s.phase() == SessionPhase::Unknown => {
                driver.lock.hand_poll_lease_on(&record, 0).await;
                Err(Error::unknown_status("session", s.status.as_deref()))
            }
            Some(s) if s.is_active() => {
                let changes = Changes {
                    verified_at_ms: s.is_usable().then(now_ms),
                    session_expire_at: s.expire_at.clone().map(Some),
                    session_created_at: s.created_at.clone().map(Some),
                    poll_until_ms: Some(0),
                    ..Changes::default()
                };
                let record = match driver.lock.write_seen(&record, changes).await {
                    Ok(Written::Done(r)) => r,
                    _ => record,
                };
                Ok(Next::Break(WakeOutcome::Awake {
                    session: s,
                    resumed: false,
                    record,
                    snapshots: Vec::new(),
                }))
            }
            // Ended: this caller wakes it again, in the same call.
            _ => {
                tracing::info!(agent = %record.key, "wake: the recorded session has ended");
                let condition = Condition::Version(record.version);
                match self.acquire(&condition, Some(&record)).await? {
                    Acquired::Held(held) => {
                        Ok(Next::Break(Box::pin(self.hold(*held, true)).await?))
                    }
                    Acquired::Lost(r) => Ok(Next::Continue(r)),
                }
            }
        }
    }

    /// A sleep holds the agent: wait for it as its joiners do, then decide again.
    async fn await_sleep(&self, record: AgentRecord) -> Result<Next, Error> {
        let watched = crate::sleep::watch(&self.driver, self.agents, record, false);
        match watched.await {
            Ok(ControlFlow::Break(SleepOutcome::Sleeping { record })) => {
                Ok(Next::Break(WakeOutcome::Waking { record }))
            }
            Ok(ControlFlow::Break(SleepOutcome::Asleep { record, .. })) => {
                Ok(Next::Continue(Some(record)))
            }
            Ok(ControlFlow::Continue(r)) => Ok(Next::Continue(r)),
            Err(Error::SleepFailed(_)) => Ok(Next::Continue(
                self.driver.lock.read(&self.target.key).await?,
            )),
            Err(e) => Err(e),
        }
    }
}

impl<S: AgentStore, K: AgentKit> Progress<S> for Waking<'_, '_, S, K> {
    type Seen = Session;

    /// GetSession: Ready completes the wake, ended fails it; an undocumented status fails it
    /// keeping the session, so the next wake asks again rather than start another.
    async fn look(
        &self,
        driver: &Driver<'_, S>,
        home: &Home,
        record: &AgentRecord,
        seen: Option<Session>,
    ) -> Look<Session> {
        let Some(session_id) = record.session_id.as_deref() else {
            return Look::Later;
        };
        let observed = match seen {
            Some(s) => Ok(Some(s)),
            None => session(self.agents.agentkit, home, session_id, driver.deadline()).await,
        };
        let s = match observed {
            Ok(Some(s)) if s.is_usable() => {
                let changes = Changes {
                    state: Some(WakeState::Awake),
                    // A wake is use: idle from now (docs/idle.md).
                    idle_at_ms: Some(self.agents.settings.idle.idle_at(record, now_ms())),
                    announce: Some(crate::invocation::announcement(Announce::Awake)),
                    error: Some(None),
                    resume_sent_at_ms: Some(None),
                    session_expire_at: Some(s.expire_at.clone()),
                    session_created_at: Some(s.created_at.clone()),
                    verified_at_ms: Some(now_ms()),
                    ..Changes::default()
                };
                return Look::Done { changes, seen: s };
            }
            Ok(s) => s,
            // AgentKit did not answer this time: the next poll may (within the budget).
            Err(e) => {
                tracing::info!(agent = %record.key, error = %e, "readiness poll failed; polling on");
                return Look::Pending;
            }
        };
        let error = match s {
            Some(s) if s.phase() == SessionPhase::Starting => return Look::Pending,
            Some(s) if s.phase() == SessionPhase::Unknown => {
                Error::unknown_status("session", s.status.as_deref())
            }
            ended => Error::WakeFailed(format!(
                "the resumed session ended ({})",
                ended.and_then(|s| s.status).as_deref().unwrap_or("gone")
            )),
        };
        let code = match error {
            Error::WakeFailed(_) => SESSION_ENDED,
            _ => error.code(),
        };
        Look::Failed {
            changes: failed(code, &error, None),
            error,
        }
    }
}

/// The fields a failed wake writes; `session_id`: a session kept for the next wake to look at.
fn failed(code: &str, error: &Error, session_id: Option<&str>) -> Changes {
    Changes {
        state: Some(WakeState::Failed),
        announce: Some(crate::invocation::announcement(Announce::WakeFailed)),
        error: Some(Some(recorded_failure(code, &error.to_string()))),
        resume_sent_at_ms: Some(None),
        session_id: session_id.map(|s| Some(s.to_string())),
        ..Changes::default()
    }
}

/// An awake outcome answered from the record alone, which says the session was seen Ready.
fn from_record(record: AgentRecord, resumed: bool) -> WakeOutcome {
    let session = Session {
        session_id: record.session_id.clone(),
        user_session_id: crate::identity::user_session_id(&record.key.agent_id).map(str::to_string),
        status: Some("Ready".into()),
        expire_at: record.session_expire_at.clone(),
        created_at: record.session_created_at.clone(),
        ..Session::default()
    };
    WakeOutcome::Awake {
        session,
        resumed,
        record,
        snapshots: Vec::new(),
    }
}

/// What the holder knows when it starts polling a recorded session.
struct Recorded {
    pub session_id: String,
    pub snapshot_id: Option<String>,
    /// As last seen (an adopted session), so the first poll is not repeated.
    pub seen: Option<Session>,
    /// This wake started it (or a concurrent, earlier holder of this wake did).
    pub resumed: bool,
}

impl<S: AgentStore, K: AgentKit> Waking<'_, '_, S, K> {
    /// Hold the agent through its wake. `session_ended`: the previous session is known ended.
    async fn hold(&self, mut held: Held, session_ended: bool) -> Result<WakeOutcome, Error> {
        let deadline = self.driver.deadline();
        let key = &self.target.key;
        let agents = self.agents;

        // 1. Where the agent lives.
        let (home, mut listed) = match self.driver.locate(agents.agentkit, &mut held).await {
            Ok(Some(w)) => (w.home, w.snapshots),
            Ok(None) => return Err(Error::AgentNotFound),
            Err(e) => return Err(self.fail(&mut held, e, None).await),
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
            match session(agents.agentkit, &home, &previous, deadline).await {
                Ok(Some(s)) => match s.phase() {
                    SessionPhase::Ended => {}
                    SessionPhase::Unknown => {
                        let err = Error::unknown_status("session", s.status.as_deref());
                        return Err(self.fail(&mut held, err, Some(&previous)).await);
                    }
                    SessionPhase::Starting if was_stuck(before.as_ref()) => {
                        // Stuck: end it if a wake said so already, else say so.
                        let ended = if before.as_ref().is_some_and(said_stuck) {
                            self.end_stuck(&home, &previous, deadline).await
                        } else {
                            Err(Error::SessionStuck(format!(
                                "session {previous} was still starting after the readiness timeout"
                            )))
                        };
                        if let Err(e) = ended {
                            return Err(self.fail(&mut held, e, Some(&previous)).await);
                        }
                    }
                    SessionPhase::Starting | SessionPhase::Usable => adopted = Some(s),
                },
                Ok(None) => {}
                Err(e) => return self.interrupted(held, e.into()).await,
            }
        }
        if adopted.is_none() {
            let metadata = snapshot_metadata(
                listed.as_deref().unwrap_or_default(),
                before.as_ref().and_then(|b| b.snapshot_id.as_deref()),
            );
            let sent = held.record.resume_sent_at_ms;
            adopted = match self.find_started(&home, sent, &metadata, deadline).await {
                Ok(found) => found,
                Err(e) => return self.interrupted(held, e).await,
            };
        }
        if let Some(s) = adopted {
            // Started by a wake in flight (a dead holder, an unknown Resume): it counts as woken.
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
            return self.record_and_poll(held, &home, recorded, snapshots).await;
        }

        // 3. A Resume somebody sent, outcome unknown: wait it out rather than double it.
        if let Some(sent) = held.record.resume_sent_at_ms {
            let until = sent + agents.settings.ready_timeout.as_millis() as u64;
            if now_ms() < until {
                tracing::info!(agent = %key, "wake: an earlier Resume is unaccounted for; waiting for it");
                let changes = Changes {
                    lease_until_ms: Some(until),
                    poll_until_ms: Some(0),
                    describe: Some(home.description()),
                    ..Changes::default()
                };
                return match self.driver.lock.write(&mut held, changes).await? {
                    Written::Done(r) => Ok(WakeOutcome::Waking { record: r }),
                    Written::Lost(r) => self.follow(r).await,
                };
            }
        }

        // 4. Which snapshot.
        if home.retention == Retention::Temporary {
            // An ended session the record still said awake: announce that end as AgentKit's.
            if before.as_ref().is_some_and(|b| b.state == WakeState::Awake) {
                let mut changes = asleep_at(&home);
                crate::index_sync::learned_end(&mut changes, None);
                let state = changes.state.take().unwrap_or(WakeState::Failed);
                self.driver.give_back(&mut held, state, changes).await;
            } else {
                self.give_back(&mut held, &home).await;
            }
            return Err(Error::NotWakeable(
                "a temporary agent cannot be woken once its session has ended".into(),
            ));
        }
        // Boxed: a large future (listings and choices live across awaits).
        let picked =
            Box::pin(self.pick_snapshot(&mut held, &home, before.as_ref(), listed.take())).await?;
        let (snapshot, listing) = match picked {
            Picked::Snapshot { snapshot, listing } => (snapshot, listing),
            Picked::Waiting(record) => return Ok(WakeOutcome::Waking { record }),
            Picked::Lost(record) => return self.follow(record).await,
        };
        let snapshot_id = snapshot.snapshot_id.clone().unwrap_or_default();

        // 5. Time for one whole AgentKit request by the deadline (not the wait), or none is sent.
        if deadline.remaining() < agents.agentkit.request_timeout() {
            self.give_back(&mut held, &home).await;
            return Err(Error::no_time_to("wake the agent"));
        }

        // 6. Say a Resume is on its way before it is; an unfollowed marker holds nobody long.
        let sent_at = now_ms();
        let changes = Changes {
            // The listing is current (taken under the lock): the index's copy of it.
            snapshots: Some(crate::view::snapshot_views(&own_snapshots(&listing, key))),
            resume_sent_at_ms: Some(Some(sent_at)),
            snapshot_id: Some(Some(snapshot_id.clone())),
            lease_until_ms: Some(self.driver.lease_until(sent_at, agents.settings.lock.lease)),
            poll_until_ms: Some(deadline.epoch_ms()),
            error: Some(None),
            describe: Some(described(&held.record, &home, &snapshot)),
            ..Changes::default()
        };
        match self.driver.lock.write(&mut held, changes).await {
            Ok(Written::Done(_)) => {}
            Ok(Written::Lost(r)) => return self.follow(r).await,
            // Maybe landed, no Resume sent: take the marker back, lest anyone wait it out.
            Err(e) => {
                tracing::warn!(agent = %key, error = %e, "could not confirm the Resume marker; taking it back");
                self.give_back(&mut held, &home).await;
                return Err(e.into());
            }
        }

        // 7. Resume, retries included, within the marker's window (after it, another resumes).
        let request = ResumeSessionFromSnapshot::new(&home.tool_id, &snapshot_id);
        crate::invocation::emit(crate::invocation::Metric::of("wake").count("ResumesSent", 1));
        let since_sent = Duration::from_millis(now_ms().saturating_sub(sent_at));
        let window = agents.settings.ready_timeout.saturating_sub(since_sent);
        let within = deadline.min_after(window.saturating_sub(agents.settings.lock.skew_margin));
        let answer = agents.agentkit.call(&home.region, &request, within).await;
        let session_id = match answer {
            Ok(r) if !r.session_id.is_empty() => r.session_id,
            Ok(_) => {
                tracing::warn!(agent = %key, "Resume answered no SessionId; its outcome is unknown");
                return self.unknown_resume(held, &home, &listing).await;
            }
            Err(e) if e.is_not_found() => {
                tracing::info!(agent = %key, %snapshot_id, "the snapshot vanished before Resume");
                self.give_back(&mut held, &home).await;
                return Err(Error::NotWakeable(format!(
                    "snapshot {snapshot_id} no longer exists"
                )));
            }
            Err(e) if e.outcome_unknown() => {
                tracing::warn!(agent = %key, error = %e, "Resume may have acted; its outcome is unknown");
                return self.unknown_resume(held, &home, &listing).await;
            }
            Err(e) => return Err(self.fail(&mut held, e.into(), None).await),
        };
        tracing::info!(agent = %key, %session_id, "wake: resumed");
        if self.target.user_session_id().is_none() {
            // Nothing in AgentKit says whose this session is: the claim does.
            let claimed = crate::locate::claims::claim(&agents.store, &home, &session_id, key);
            if let Err(e) = claimed.await {
                tracing::warn!(agent = %key, error = %e, "could not claim the resumed session");
            }
        }
        let recorded = Recorded {
            session_id,
            snapshot_id: Some(snapshot_id),
            seen: None,
            resumed: true,
        };
        self.record_and_poll(held, &home, recorded, listing).await
    }

    /// Record the session (lease to the readiness timeout), then poll it until Ready.
    async fn record_and_poll(
        &self,
        mut held: Held,
        home: &Home,
        recorded: Recorded,
        snapshots: Vec<Snapshot>,
    ) -> Result<WakeOutcome, Error> {
        let wait = self.driver.wait();
        let now = now_ms();
        let asking = self.agents.agentkit.request_timeout().as_millis() as u64;
        let changes = Changes {
            session_id: Some(Some(recorded.session_id.clone())),
            snapshot_id: Some(recorded.snapshot_id.clone()),
            resume_sent_at_ms: Some(None),
            lease_until_ms: Some(
                self.driver
                    .lease_until(now, self.agents.settings.ready_timeout),
            ),
            poll_until_ms: Some(wait.epoch_ms().max(now + asking)),
            awaited_since_ms: Some(now),
            describe: Some(home.description()),
            ..Changes::default()
        };
        let record = match self.driver.lock.write(&mut held, changes).await? {
            Written::Done(r) => r,
            Written::Lost(r) => return self.follow(r).await,
        };
        let holder = Settler::Holder(&mut held);
        let polled = self
            .driver
            .poll(self, holder, home, record, recorded.seen, wait);
        Ok(match polled.await? {
            Polled::Settled { record, seen } => WakeOutcome::Awake {
                session: seen,
                resumed: recorded.resumed,
                record,
                snapshots,
            },
            Polled::Pending(record) => WakeOutcome::Waking { record },
        })
    }

    /// A Resume of unknown outcome: keep the lock; adopt a session that shows up at once.
    async fn unknown_resume(
        &self,
        held: Held,
        home: &Home,
        listing: &[Snapshot],
    ) -> Result<WakeOutcome, Error> {
        let metadata = snapshot_metadata(listing, held.record.snapshot_id.as_deref());
        let sent = held.record.resume_sent_at_ms;
        let found = self
            .find_started(home, sent, &metadata, self.driver.deadline())
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(agent = %held.key, error = %e, "could not reconcile an unknown Resume yet");
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
            return self.record_and_poll(held, home, recorded, snapshots).await;
        }
        self.hand_over(held).await
    }

    /// Keep the lock with the Resume unaccounted for; the next poller looks for its session (202).
    async fn hand_over(&self, mut held: Held) -> Result<WakeOutcome, Error> {
        // The record already names the Tool (the marker did), so pollers know where to look.
        let sent = held.record.resume_sent_at_ms.unwrap_or_else(now_ms);
        let changes = Changes {
            poll_until_ms: Some(0),
            lease_until_ms: Some(
                self.driver
                    .lease_until(sent, self.agents.settings.ready_timeout),
            ),
            ..Changes::default()
        };
        match self.driver.lock.write(&mut held, changes).await {
            Ok(Written::Done(r)) => Ok(WakeOutcome::Waking { record: r }),
            Ok(Written::Lost(r)) => self.follow(r).await,
            Err(e) => {
                tracing::warn!(agent = %held.key, error = %e, "could not hand polling over");
                Ok(WakeOutcome::Waking {
                    record: held.record,
                })
            }
        }
    }

    /// The lock was lost to a takeover: follow the new holder.
    async fn follow(&self, record: Option<AgentRecord>) -> Result<WakeOutcome, Error> {
        let Some(record) = record else {
            return Err(Error::AgentNotFound);
        };
        Ok(match self.watch(record, true).await? {
            ControlFlow::Break(outcome) => outcome,
            ControlFlow::Continue(r) => WakeOutcome::Waking {
                record: self.driver.seen(r),
            },
        })
    }

    /// Record a failed wake (`failed`) and hand back the error to answer.
    async fn fail(&self, held: &mut Held, err: Error, session_id: Option<&str>) -> Error {
        tracing::warn!(agent = %held.key, reason = %err, "wake failed");
        let changes = failed(err.code(), &err, session_id);
        self.driver
            .give_back(held, WakeState::Failed, changes)
            .await;
        err
    }

    /// Give the lock back with nothing woken ([`nothing_woken`]).
    async fn give_back(&self, held: &mut Held, home: &Home) {
        let (state, changes) = nothing_woken(held.before.as_ref(), home);
        self.driver.give_back(held, state, changes).await;
    }
}

/// Where the agent lives, plus its snapshot's names when the record has none (first met asleep).
fn described(record: &AgentRecord, home: &Home, snapshot: &Snapshot) -> Description {
    let lacking = |recorded: &Option<String>, key: &str| match recorded {
        Some(_) => None,
        None => metadata_value(&snapshot.session_metadata, key).map(str::to_string),
    };
    Description {
        display_name: lacking(&record.description.display_name, METADATA_DISPLAY_NAME_KEY),
        created_by: lacking(&record.description.created_by, METADATA_CREATOR_KEY),
        ..home.description()
    }
}

/// The previous generation's session should be ready by now: a lapsed wake, or one said stuck.
fn was_stuck(before: Option<&AgentRecord>) -> bool {
    before.is_some_and(|b| {
        b.state == WakeState::Waking || (b.state == WakeState::Failed && said_stuck(b))
    })
}

/// A wake already recorded this session stuck.
fn said_stuck(record: &AgentRecord) -> bool {
    record.error.as_deref().and_then(recorded_code) == Some(SESSION_STUCK)
}

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
    async fn end_stuck(
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
    async fn interrupted(&self, mut held: Held, err: Error) -> Result<WakeOutcome, Error> {
        if held.record.resume_sent_at_ms.is_none() {
            return Err(self.fail(&mut held, err, None).await);
        }
        tracing::warn!(agent = %held.key, error = %err, "reconcile failed; an earlier Resume is still unaccounted for, handing polling over");
        self.hand_over(held).await
    }

    /// Step 4: the snapshot to wake from; errors have given the lock back. A snapshot being made is
    /// waited for within the wait; one not listed yet, within the deadline.
    async fn pick_snapshot(
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
            .and_then(crate::ambient::epoch_ms)?;
        let now = now_ms();
        let skew = self.agents.settings.lock.skew_margin.as_millis() as u64;
        let grace = self.agents.settings.snapshot_grace.as_millis() as u64;
        // Only a session that ended by expiring: one ended early (deleted, stopped) leaves none.
        (expired <= now + skew && now < expired + grace).then_some(Expected { session_id })
    }
}

/// The metadata of the snapshot a Resume was sent for (to recognise its session later).
fn snapshot_metadata(listing: &[Snapshot], snapshot_id: Option<&str>) -> Vec<MetadataEntry> {
    listing
        .iter()
        .find(|s| s.snapshot_id.as_deref() == snapshot_id && snapshot_id.is_some())
        .map(|s| s.session_metadata.clone())
        .unwrap_or_default()
}

/// What a wake that found no live session gives back: asleep, announcing any end it learned.
fn nothing_woken(before: Option<&AgentRecord>, home: &Home) -> (WakeState, Changes) {
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
fn asleep_at(home: &Home) -> Changes {
    Changes {
        resume_sent_at_ms: Some(None),
        describe: Some(home.description()),
        ..Changes::default()
    }
}

/// What step 4 came to.
#[allow(clippy::large_enum_variant)] // made once per wake, consumed at once
enum Picked {
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
