//! The wake (docs/wake-protocol.md): wake an agent exactly once however many callers ask at the
//! same moment, on every day of its life, and survive a caller dying (or an answer getting
//! lost) at any step without a second Resume or a lost snapshot.
//!
//! A wake is one of the two changes the lock's driver carries out (`crate::lock::driver`); here
//! is what is a wake's own: the holder's path ([`holder`]), a poller's question (GetSession),
//! an awake record checked by one caller (`Waking::verify`), and a sleep in flight waited for.
//! Ambiguity is never read as failure: a Resume whose outcome is unknown keeps the lock until
//! the readiness timeout (202 meanwhile), and nobody sends another before that.

mod holder;

use crate::agentkit::types::{Session, Snapshot};
use crate::agentkit::AgentKit;
use crate::deadline::Budget;
use crate::domain::failure::{is_definite, recorded_failure, SESSION_ENDED};
use crate::domain::WakeState;
use crate::domain::{AgentKey, AgentRecord, Announce, Description, SessionPhase};
use crate::error::Error;
use crate::locate::sessions::session;
use crate::locate::Home;
use crate::lock::driver::{Agents, Change, Driver, Look, Watched};
use crate::lock::{Acquired, Decision, Generation, Held, Intent, Written};
use crate::offboarding::Admitted;
use crate::sleep::{SleepOutcome, SleepTarget};
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
    /// Descriptive fields written with the acquire (the Tool and region once known).
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
    /// A live session: `resumed` when this call or a concurrent one woke it, `false` when it
    /// was already awake.
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
    /// Ensure `target` is awake, deciding from `record` (the caller's consistent read),
    /// waiting on others until `budget.wait` and answering by `budget.work`.
    pub async fn wake(
        &self,
        target: &WakeTarget,
        record: Option<AgentRecord>,
        budget: Budget,
    ) -> Result<WakeOutcome, Error> {
        let driver = self.driver(&target.key, target.home.clone(), budget);
        let waking = Waking {
            agents: self,
            target,
        };
        driver.run(&waking, record).await
    }
}

/// One run of a wake: the change the driver carries out.
struct Waking<'w, 'a, S, K> {
    agents: &'w Agents<'a, S, K>,
    target: &'w WakeTarget,
}

impl<S: AgentStore, K: AgentKit> Change<S> for Waking<'_, '_, S, K> {
    type Outcome = WakeOutcome;
    type Seen = Session;

    fn intent(&self) -> Intent {
        Intent::Wake {
            verify_fresh: self.agents.settings.verify_fresh,
        }
    }

    fn acquire(&self) -> (WakeState, Generation, Description) {
        let describe = self.target.describe.clone();
        (WakeState::Waking, Generation::New, describe)
    }

    /// A wake that failed moments ago is the answer to its pollers, unless this one names
    /// another snapshot, or the failure was a refusal to try (throttled).
    fn recent(&self, r: &AgentRecord) -> Option<Result<WakeOutcome, Error>> {
        let same = self.target.snapshot_id.is_none() || self.target.snapshot_id == r.snapshot_id;
        let error = r.error.as_ref().filter(|e| is_definite(e))?;
        (r.state == WakeState::Failed && same).then(|| Err(Error::WakeFailed(error.clone())))
    }

    fn ended(&self, r: &AgentRecord) -> Option<Result<WakeOutcome, Error>> {
        match r.state {
            WakeState::Failed => Some(Err(Error::WakeFailed(
                r.error.clone().unwrap_or_else(|| "the wake failed".into()),
            ))),
            // The wake this caller watched has completed: its answer, however old the record.
            WakeState::Awake if r.session_id.is_some() => Some(Ok(from_record(r.clone(), true))),
            _ => None,
        }
    }

    fn in_flight(&self, record: AgentRecord) -> WakeOutcome {
        WakeOutcome::Waking { record }
    }

    fn settled(&self, record: AgentRecord, session: Session) -> WakeOutcome {
        WakeOutcome::Awake {
            session,
            resumed: true,
            record,
            snapshots: Vec::new(),
        }
    }

    async fn hold(&self, driver: &Driver<'_, S>, held: Held) -> Result<WakeOutcome, Error> {
        self.hold_agent(driver, held, false).await
    }

    async fn otherwise(
        &self,
        driver: &Driver<'_, S>,
        decision: Decision,
        record: AgentRecord,
        joined: bool,
    ) -> Result<Watched<WakeOutcome>, Error> {
        match decision {
            Decision::Awake => Ok(Watched::Done(from_record(record, joined))),
            Decision::Verify => Box::pin(self.verify(driver, record)).await,
            Decision::AwaitSleep => Box::pin(self.await_sleep(driver, record)).await,
            other => Err(Error::Internal(format!("a wake was answered {other:?}"))),
        }
    }

    fn joining(&self) {
        // A caller that joins a wake in flight is a Resume it did not send.
        crate::metrics::emit(crate::metrics::Record::of("wake").count("WakesJoined", 1));
    }

    fn named(&self, r: &AgentRecord) -> bool {
        r.session_id.is_some() || r.resume_sent_at_ms.is_some()
    }

    fn by_anyone(&self, r: &AgentRecord) -> Condition {
        Condition::WakingWith {
            fence: r.fence,
            session_id: r.session_id.clone().unwrap_or_default(),
        }
    }

    /// GetSession of the recorded session: Ready completes the wake, ended fails it (the
    /// snapshot untouched), a status nobody documented fails it with the session kept, so
    /// the next wake asks about it again rather than start another.
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

    /// A Resume whose answer was lost (`resume_sent_at`, no session): find the session it
    /// started and record it (never send another).
    async fn prepare(
        &self,
        driver: &Driver<'_, S>,
        home: &Home,
        record: AgentRecord,
    ) -> Result<Option<(AgentRecord, Option<Session>)>, Error> {
        let sent = match (&record.session_id, record.resume_sent_at_ms) {
            (Some(_), _) => return Ok(Some((record, None))),
            (None, Some(sent)) => sent,
            (None, None) => return Ok(None),
        };
        let found = self
            .find_started(home, Some(sent), &[], driver.deadline())
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
        Ok(match driver.lock.write_seen(&record, changes).await? {
            Written::Done(r) => {
                tracing::info!(agent = %record.key, "poller recorded the session of an unknown Resume");
                Some((r, Some(s)))
            }
            Written::Lost(_) => None,
        })
    }
}

impl<S: AgentStore, K: AgentKit> Waking<'_, '_, S, K> {
    /// An `awake` record not verified lately: one caller wins a poll lease and asks GetSession
    /// once; the others await its verdict. The verification is written after the check, not
    /// by its lease: else a caller in between would answer with a session already ended.
    pub(super) async fn verify(
        &self,
        driver: &Driver<'_, S>,
        seen: AgentRecord,
    ) -> Result<Watched<WakeOutcome>, Error> {
        let deadline = driver.deadline();
        let until_ms = deadline
            .min_after(self.agents.settings.poll_lease)
            .epoch_ms();
        let record = match driver.lock.take_poll_lease(&seen, until_ms).await? {
            Written::Done(r) => r,
            Written::Lost(r) => return Ok(Watched::Again(r)),
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
                Ok(Watched::Done(WakeOutcome::Awake {
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
                match driver.acquire(self, &condition, Some(&record)).await? {
                    Acquired::Held(held) => Ok(Watched::Done(
                        Box::pin(self.hold_agent(driver, *held, true)).await?,
                    )),
                    Acquired::Lost(r) => Ok(Watched::Again(r)),
                }
            }
        }
    }

    /// A sleep holds the agent: wait for it as its joiners do, then decide again (asleep:
    /// woken from the sleep's snapshot; the sleep failed: awake).
    async fn await_sleep(
        &self,
        driver: &Driver<'_, S>,
        record: AgentRecord,
    ) -> Result<Watched<WakeOutcome>, Error> {
        let target = SleepTarget {
            key: self.target.key.clone(),
            home: driver.home(&record),
            describe: self.target.describe.clone(),
            admitted: self.target.admitted,
        };
        match Box::pin(self.agents.watch_sleep(driver, &target, record)).await {
            Ok(Watched::Done(SleepOutcome::Sleeping { record })) => {
                Ok(Watched::Done(WakeOutcome::Waking { record }))
            }
            Ok(Watched::Done(SleepOutcome::Asleep { record, .. })) => {
                Ok(Watched::Again(Some(record)))
            }
            Ok(Watched::Again(r)) => Ok(Watched::Again(r)),
            Err(Error::SleepFailed(_)) => Ok(Watched::Again(driver.lock.read(driver.key).await?)),
            Err(e) => Err(e),
        }
    }
}

/// The fields a failed wake writes (`code: reason`), the snapshot untouched; with `session_id`
/// the session kept, which the next wake looks at first, never beside it.
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
