//! The one driver of a per-agent state change (docs/wake-protocol.md): a wake and a sleep are
//! its two uses ([`Change`]), and this file owns everything they do alike.
//!
//! - **decide** ([`Driver::run`]): the record read, the pure [`super::decide`], and a few
//!   rounds of it when a CAS is lost; a change that ended moments ago answers from the record;
//! - **hold**: the winner of the acquire runs the change's own path ([`Change::hold`]): what it
//!   sends AgentKit, and what it records before and after;
//! - **watch** ([`Driver::watch`]): everyone else reads the record, not AgentKit, until the
//!   change they joined has ended, their wait is over (202), or there is nothing to wait for;
//! - **poll lease** ([`Driver::carry_on`]): once the holder's request has ended, whoever wins a
//!   short lease on the record asks AgentKit about the change in flight, so a storm asks at the
//!   pace one poller would, and hands the lease on when it stops asking;
//! - **settle** ([`Driver::poll`], [`Driver::settle`]): whoever sees the change done (or
//!   failed) writes it, fenced for the holder and *by anyone* for the rest, under a condition
//!   that names exactly that change;
//! - **give back** ([`Driver::give_back`]): the holder lets go with the state to rest in.
//!
//! What is particular to a wake or a sleep, the driver asks of the [`Change`]: what it sends,
//! what AgentKit shows when it is done (a session Ready; a snapshot Ready, then the session
//! ended), and what a record answers a caller.
//!
//! Over the 500 lines of other files on purpose (shared/tests/layers.rs names it): this file
//! owns one protocol, the trait and the steps that drive it read best in one place.

use std::sync::OnceLock;
use std::time::Duration;

use super::{
    decide, Acquire, Acquired, AgentLock, Decision, Generation, Held, Intent, LockSettings,
    WakeSettings, Written,
};
use crate::agentkit::AgentKit;
use crate::deadline::{Budget, Deadline};
use crate::domain::failure::OUTCOME_KEPT;
use crate::domain::{AgentKey, AgentRecord, Description, ToolRegistry, WakeState};
use crate::error::Error;
use crate::locate::{home_of, home_or_locate, Home, Whereabouts};
use crate::store::{AgentStore, Changes, Condition, StoreError, Within};
use crate::timestamp::now_ms;

/// How watching an agent held by someone else ended: with an answer, or with nothing left to
/// wait for (decide again from the record).
#[allow(clippy::large_enum_variant)] // returned once, consumed at once
pub enum Watched<T> {
    Done(T),
    /// Nothing to wait for any more: decide again from this record.
    Again(Option<AgentRecord>),
}

/// What one question to AgentKit about a change in flight came to.
pub enum Look<T> {
    /// Not done yet: ask again after a pause.
    Pending,
    /// Not to be settled by this caller now (nothing to ask about yet, or too little time
    /// left to finish): the change goes on from the record.
    Later,
    /// Done: settle with `changes`; `seen` is what AgentKit showed.
    Done { changes: Changes, seen: T },
    /// It will not be done: settle with `changes`, and answer `error`.
    Failed { changes: Changes, error: Error },
}

/// Where a poll of a change in flight got to.
#[allow(clippy::large_enum_variant)] // returned once, consumed at once
pub enum Carried<T> {
    /// Settled as done: the record as written, and what AgentKit showed.
    Settled { record: AgentRecord, seen: T },
    /// Still in flight when the poller stopped asking.
    Pending(AgentRecord),
}

/// Who settles a change: its holder (fenced writes) or anyone holding a poll lease (writes by
/// anyone).
pub enum Settler<'h> {
    Holder(&'h mut Held),
    Anyone,
}

/// A per-agent state change the driver carries out (see the module docs).
pub trait Change<S: AgentStore>: Sync {
    /// What a caller is answered.
    type Outcome;
    /// What AgentKit shows when the change is done (a session; a snapshot).
    type Seen: Send;

    /// What the caller wants, for [`super::decide`].
    fn intent(&self) -> Intent;
    /// The state and generation an acquire takes, and what it describes.
    fn acquire(&self) -> (WakeState, Generation, Description);
    /// The answer owed a poller by a record a change of this kind that ended wrote moments ago.
    fn recent(&self, record: &AgentRecord) -> Option<Result<Self::Outcome, Error>>;
    /// The answer of a record in which the change this caller joined (same fence) has ended.
    fn ended(&self, record: &AgentRecord) -> Option<Result<Self::Outcome, Error>>;
    /// The answer when this caller's wait ends with the change still in flight (202).
    fn in_flight(&self, record: AgentRecord) -> Self::Outcome;
    /// The answer of a poller that settled the change it joined.
    fn settled(&self, record: AgentRecord, seen: Self::Seen) -> Self::Outcome;
    /// The winner's path, from the acquire to the answer.
    async fn hold(&self, driver: &Driver<'_, S>, held: Held) -> Result<Self::Outcome, Error>;
    /// A decision only this change knows (a wake: trust an awake record, check it, wait for a
    /// sleep). None by default.
    async fn otherwise(
        &self,
        driver: &Driver<'_, S>,
        decision: Decision,
        record: AgentRecord,
        joined: bool,
    ) -> Result<Watched<Self::Outcome>, Error> {
        let _ = (driver, record, joined);
        Err(Error::Internal(format!(
            "the lock answered {decision:?}, which this change does not know"
        )))
    }
    /// A caller joined a change in flight (counted by the change, once per caller).
    fn joining(&self) {}

    /// Whether `record` names what the change waits for (else nobody can poll it yet).
    fn named(&self, record: &AgentRecord) -> bool;
    /// The condition of a write by anyone that settles `record`'s change, and only it.
    fn by_anyone(&self, record: &AgentRecord) -> Condition;
    /// Ask AgentKit once about `record`'s change (unless it was `seen` already).
    async fn look(
        &self,
        driver: &Driver<'_, S>,
        home: &Home,
        record: &AgentRecord,
        seen: Option<Self::Seen>,
    ) -> Look<Self::Seen>;
    /// Before a poller asks: make the record say what it waits for, if it does not yet (a
    /// wake's Resume whose answer was lost). `None`: nothing to poll.
    async fn prepare(
        &self,
        driver: &Driver<'_, S>,
        home: &Home,
        record: AgentRecord,
    ) -> Result<Option<(AgentRecord, Option<Self::Seen>)>, Error> {
        let _ = (driver, home);
        Ok(Some((record, None)))
    }
}

/// What the wakes and sleeps of one request (or one agent of a tick) are carried out with.
/// `Agents::wake` and `Agents::sleep` each run a [`Driver`] over them.
pub struct Agents<'a, S, K> {
    pub(crate) store: Within<'a, S>,
    pub(crate) agentkit: &'a K,
    pub(crate) registry: &'a ToolRegistry,
    pub(crate) settings: &'a WakeSettings,
}

impl<'a, S: AgentStore, K: AgentKit> Agents<'a, S, K> {
    pub fn new(
        store: Within<'a, S>,
        agentkit: &'a K,
        registry: &'a ToolRegistry,
        settings: &'a WakeSettings,
    ) -> Self {
        Agents {
            store,
            agentkit,
            registry,
            settings,
        }
    }

    /// The driver of one change of `key` (`home`: where it lives, when the caller knows),
    /// answering by `budget.work` and waiting on others until `budget.wait`.
    pub(crate) fn driver<'d>(
        &'d self,
        key: &'d AgentKey,
        home: Option<Home>,
        budget: Budget,
    ) -> Driver<'d, S> {
        Driver {
            lock: AgentLock::new(self.store.until(budget.work), &self.settings.lock)
                .waiting_until(budget.wait),
            settings: self.settings,
            key,
            registry: self.registry,
            home: home.map(OnceLock::from).unwrap_or_default(),
            ask: self.agentkit.request_timeout(),
        }
    }
}

/// One caller's run of a change of one agent: the lock within the caller's budget, the
/// settings, and where the agent lives, resolved once.
pub struct Driver<'a, S> {
    pub lock: AgentLock<'a, S>,
    pub settings: &'a WakeSettings,
    pub key: &'a AgentKey,
    registry: &'a ToolRegistry,
    home: OnceLock<Home>,
    /// One AgentKit request's timeout: a poll lease covers at least one call.
    ask: Duration,
}

impl<'a, S: AgentStore> Driver<'a, S> {
    /// By when the caller answers.
    pub fn deadline(&self) -> Deadline {
        self.lock.deadline()
    }

    /// Until when the caller may wait on others.
    pub fn wait(&self) -> Deadline {
        self.lock.wait()
    }

    /// Where the agent lives: as known, else as `record` says (and known from then on).
    pub fn home(&self, record: &AgentRecord) -> Option<Home> {
        match self.home.get() {
            Some(home) => Some(home.clone()),
            None => home_of(self.registry, record).map(|h| self.home.get_or_init(|| h).clone()),
        }
    }

    /// Where the agent lives, for its holder: as known or recorded, else located (and known
    /// from then on). `None`: nothing of it exists anywhere, and the lock is given back.
    pub async fn locate<K: AgentKit>(
        &self,
        agentkit: &K,
        held: &mut Held,
    ) -> Result<Option<Whereabouts>, Error> {
        let (known, deadline) = (self.home.get(), self.deadline());
        let found = home_or_locate(
            agentkit,
            self.registry,
            self.key,
            Some(&held.record),
            known,
            deadline,
        );
        let found = Box::pin(found).await?;
        match &found {
            Some(w) => _ = self.home.set(w.home.clone()),
            None => self.lock.give_back_unknown(held).await,
        }
        Ok(found)
    }

    /// The lease of a change once it was sent: `timeout` from `from_ms`, never shorter than
    /// this caller's wait (it polls until then; a lease that ended first would hand the change
    /// to another caller mid-poll).
    pub fn lease_until(&self, from_ms: u64, timeout: Duration) -> u64 {
        (from_ms + timeout.as_millis() as u64).max(self.wait().epoch_ms())
    }

    /// Carry out `change`, deciding from `record` (the caller's consistent read).
    pub async fn run<C: Change<S>>(
        &self,
        change: &C,
        mut record: Option<AgentRecord>,
    ) -> Result<C::Outcome, Error> {
        let recent = record
            .as_ref()
            .filter(|r| LockSettings::written_within(r, OUTCOME_KEPT, now_ms()));
        if let Some(answer) = recent.and_then(|r| change.recent(r)) {
            return answer;
        }
        let mut joined = false;
        for _ in 0..self.settings.lock.max_rounds.max(1) {
            let now = now_ms();
            let decision = decide(record.as_ref(), now, change.intent(), &self.settings.lock);
            let watched = match decision {
                Decision::Gone => return Err(Error::AgentGone),
                Decision::Busy {
                    state,
                    retry_after_s,
                } => return Err(Error::held_by(state, retry_after_s)),
                Decision::Acquire(condition) => {
                    match self.acquire(change, &condition, record.as_ref()).await? {
                        // Boxed: a holder's path is a large future (debug builds would
                        // otherwise need a deep stack).
                        Acquired::Held(held) => return Box::pin(change.hold(self, *held)).await,
                        Acquired::Lost(r) => {
                            record = r;
                            continue;
                        }
                    }
                }
                Decision::Join | Decision::AwaitVerify => {
                    if decision == Decision::Join && !joined {
                        change.joining();
                    }
                    joined |= decision == Decision::Join;
                    let r = self.seen(record.take());
                    Box::pin(self.watch(change, r, joined)).await?
                }
                other => {
                    let r = self.seen(record.take());
                    Box::pin(change.otherwise(self, other, r, joined)).await?
                }
            };
            match watched {
                Watched::Done(outcome) => return Ok(outcome),
                Watched::Again(r) => record = r,
            }
        }
        Err(Error::AgentBusy {
            detail: "too many concurrent changes to the agent; retry".into(),
            retry_after_s: 1,
        })
    }

    fn seen(&self, record: Option<AgentRecord>) -> AgentRecord {
        record.unwrap_or_else(|| AgentRecord::absent(self.key.clone()))
    }

    /// Take the agent for `change`. Nobody polls before the holder has recorded what it waits
    /// for (it says until when it polls then), so the poll lease starts out as long as the
    /// holder's request.
    pub async fn acquire<C: Change<S>>(
        &self,
        change: &C,
        condition: &Condition,
        seen: Option<&AgentRecord>,
    ) -> Result<Acquired, StoreError> {
        let (state, generation, describe) = change.acquire();
        let how = Acquire {
            state,
            generation,
            lease: self.settings.lock.lease,
            describe: Some(describe),
            poll_until_ms: Some(self.deadline().epoch_ms()),
        };
        self.lock.acquire(self.key, condition, seen, &how).await
    }

    /// Watch the record (see the module docs). Only a check of an awake record in flight (one
    /// GetSession) is waited for past the caller's wait: nobody answers 202 for an awake agent.
    pub async fn watch<C: Change<S>>(
        &self,
        change: &C,
        record: AgentRecord,
        joined: bool,
    ) -> Result<Watched<C::Outcome>, Error> {
        let mut joined_fence = joined.then_some(record.fence);
        let mut backoff = self.settings.watching();
        let mut current = Some(record);
        loop {
            let Some(r) = current.take() else {
                // The record vanished under the change: its holder found nothing of the agent.
                return match joined_fence {
                    Some(_) => Err(Error::AgentNotFound),
                    None => Ok(Watched::Again(None)),
                };
            };
            if joined_fence == Some(r.fence) {
                if let Some(answer) = change.ended(&r) {
                    return answer.map(Watched::Done);
                }
            }
            let now = now_ms();
            let mut until = self.wait();
            match decide(Some(&r), now, change.intent(), &self.settings.lock) {
                Decision::Join => {
                    // Follow whichever change is in flight (a takeover bumps the fence).
                    joined_fence = Some(r.fence);
                    match Box::pin(self.carry_on(change, &r)).await? {
                        Some(Carried::Settled { record, seen }) => {
                            return Ok(Watched::Done(change.settled(record, seen)))
                        }
                        Some(Carried::Pending(_)) | None => {}
                    }
                }
                Decision::AwaitVerify => {
                    let check_ends =
                        Deadline::after(Duration::from_millis(r.poll_until_ms.saturating_sub(now)));
                    until = until.max(check_ends.min(self.deadline()));
                }
                Decision::Awake => {
                    return Box::pin(change.otherwise(
                        self,
                        Decision::Awake,
                        r,
                        joined_fence.is_some(),
                    ))
                    .await
                }
                _ => return Ok(Watched::Again(Some(r))),
            }
            if !backoff.wait(until, Duration::ZERO).await {
                return Ok(Watched::Done(change.in_flight(r)));
            }
            current = self.lock.read(self.key).await?;
        }
    }

    /// If the poller of the change in `seen` is gone, win the poll lease and carry the change
    /// on until the caller's wait ends (at most a poll lease; one AgentKit request at least).
    /// `None`: somebody else polls, or there is nothing to poll yet.
    pub async fn carry_on<C: Change<S>>(
        &self,
        change: &C,
        seen: &AgentRecord,
    ) -> Result<Option<Carried<C::Seen>>, Error> {
        let now = now_ms();
        if self.settings.lock.poll_lease_holds(seen.poll_until_ms, now) || !change.named(seen) {
            return Ok(None);
        }
        let Some(home) = self.home(seen) else {
            return Ok(None);
        };
        let polling = self.settings.poll_lease.min(self.wait().remaining());
        let covering = polling.max(self.ask);
        let record = match self
            .lock
            .take_poll_lease(seen, now + covering.as_millis() as u64)
            .await?
        {
            Written::Done(r) => r,
            Written::Lost(_) => return Ok(None),
        };
        let Some((record, seen)) = Box::pin(change.prepare(self, &home, record.clone())).await?
        else {
            self.hand_poll_on(&record).await;
            return Ok(None);
        };
        let until = self.wait().min_after(polling);
        let carried =
            Box::pin(self.poll(change, Settler::Anyone, &home, record, seen, until)).await?;
        Ok(Some(carried))
    }

    /// Poll `record`'s change until it is done (settle), will not be (settle, and answer the
    /// error), or `until`: at least once (a short request asks once), the pauses at the
    /// record's pace. Stopping without an answer, hand the poll lease on.
    pub async fn poll<C: Change<S>>(
        &self,
        change: &C,
        mut settler: Settler<'_>,
        home: &Home,
        record: AgentRecord,
        mut seen: Option<C::Seen>,
        until: Deadline,
    ) -> Result<Carried<C::Seen>, Error> {
        let pace = self.settings.pace();
        loop {
            match change.look(self, home, &record, seen.take()).await {
                Look::Pending => {}
                Look::Later => break,
                Look::Done { changes, seen } => {
                    let record = self.settle(change, &mut settler, &record, changes).await;
                    return Ok(Carried::Settled { record, seen });
                }
                Look::Failed { changes, error } => {
                    tracing::warn!(agent = %record.key, %error, "the change failed");
                    self.settle(change, &mut settler, &record, changes).await;
                    return Err(error);
                }
            }
            let gap = pace.gap(record.awaited_since_ms, now_ms());
            if !until.allows(gap) {
                break;
            }
            tokio::time::sleep(gap).await;
        }
        Ok(Carried::Pending(self.hand_poll_on(&record).await))
    }

    /// Write the end of `record`'s change, the lock let go; one somebody else wrote alike first
    /// is as good. One not confirmed leaves the change done all the same: the answer shows what
    /// this caller saw, without a version (no `ETag`), and the next caller settles the record.
    pub async fn settle<C: Change<S>>(
        &self,
        change: &C,
        settler: &mut Settler<'_>,
        record: &AgentRecord,
        changes: Changes,
    ) -> AgentRecord {
        let changes = super::agent::let_go(changes);
        let written = match settler {
            Settler::Holder(held) => self.lock.write(held, changes.clone()).await,
            Settler::Anyone => {
                let condition = change.by_anyone(record);
                let changes = super::agent::on_behalf_of(record, changes.clone());
                self.lock
                    .write_by_anyone(&record.key, &condition, changes)
                    .await
            }
        };
        match written {
            Ok(Written::Done(r)) => r,
            Ok(Written::Lost(Some(r)))
                if r.fence == record.fence && changes.state == Some(r.state) =>
            {
                r
            }
            other => {
                if let Err(e) = other {
                    tracing::warn!(agent = %record.key, error = %e, "could not record the end of the change");
                }
                let mut shown = changes.apply(record.clone());
                shown.version = 0;
                shown
            }
        }
    }

    /// Let the next poller in one pause of the pace from now: this caller's poll lease covered
    /// its own calls, which are over.
    pub async fn hand_poll_on(&self, record: &AgentRecord) -> AgentRecord {
        let now = now_ms();
        let gap = self.settings.pace().gap(record.awaited_since_ms, now);
        self.lock
            .hand_poll_lease_on(record, now + gap.as_millis() as u64)
            .await
    }

    /// Give the lock back to rest in `state` with `changes`: the record as written (`None`: the
    /// lock was lost, or the write failed, which is logged: the lease lapses by itself).
    pub async fn give_back(
        &self,
        held: &mut Held,
        state: WakeState,
        changes: Changes,
    ) -> Option<AgentRecord> {
        match self.lock.release(held, state, changes).await {
            Ok(Written::Done(r)) => Some(r),
            Ok(Written::Lost(_)) => None,
            Err(e) => {
                tracing::warn!(agent = %held.key, error = %e, "could not give the lock back");
                None
            }
        }
    }
}
