//! The wake (docs/wake-protocol.md): wake an agent exactly once however many callers ask, and
//! survive a caller dying at any step without a second Resume or a lost snapshot.
//!
//! The holder's path is `holder`. Ambiguity is never failure: a Resume of unknown outcome keeps
//! the lock until the readiness timeout (202 meanwhile).

mod holder;

use std::ops::ControlFlow;

use crate::agentkit::types::{Session, Snapshot};
use crate::agentkit::AgentKit;
use crate::domain::failure::{is_definite, recorded_failure, SESSION_ENDED};
use crate::domain::WakeState;
use crate::domain::{AgentKey, AgentRecord, Announce, Description, SessionPhase};
use crate::error::Error;
use crate::invocation::Budget;
use crate::locate::session;
use crate::locate::Home;
use crate::lock::agent::{Agents, Driver, Look, Polled, Progress, Settler, Step};
use crate::lock::{Acquired, Decision, Generation, Intent, Written};
use crate::offboarding::Admitted;
use crate::sleep::SleepOutcome;
use crate::store::{AgentStore, Changes, Condition};
use crate::timestamp::now_ms;

pub use crate::lock::{WakeSettings, MIN_TTL};

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
                        crate::metrics::emit(
                            crate::metrics::Record::of("wake").count("WakesJoined", 1),
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
                    announce: Some(crate::events::announcement(Announce::Awake)),
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
        announce: Some(crate::events::announcement(Announce::WakeFailed)),
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
