//! The steps a wake and a sleep take under the lock (docs/wake-protocol.md), each a plain function
//! the change calls in order, so `crate::wake` and `crate::sleep` read top to bottom:
//!
//! - **decide** ([`Driver::decide`]): the pure [`super::decide`] of the record read;
//! - **acquire** ([`Driver::acquire`]): take the agent, the winner's request polling first;
//! - **watch** ([`Watch::next`]): everyone else reads the record, not AgentKit, until the change
//!   ends or their wait is over (202); one that finds the poller gone wins its **poll lease**;
//! - **poll** ([`Driver::poll`]): ask AgentKit about the change at the record's pace;
//! - **settle** ([`Driver::settle`]): write the end under a condition naming exactly that change;
//! - **give back** ([`Driver::give_back`]): the holder lets go with the state to rest in.

use std::time::Duration;

use super::agent::{Acquire, Acquired, AgentLock, Generation, Held, Written};
use super::decide::{decide, Decision, Intent};
use super::settings::{LockSettings, WakeSettings};
use crate::agentkit::AgentKit;
use crate::domain::failure::OUTCOME_KEPT;
use crate::domain::{AgentKey, AgentRecord, Description, ToolRegistry, WakeState};
use crate::error::Error;
use crate::invocation::{Backoff, Budget, Deadline};
use crate::locate::{home_of, home_or_locate, Home, Whereabouts};
use crate::store::{AgentStore, Changes, Condition, StoreError, Within};
use crate::timestamp::now_ms;

/// What one question to AgentKit about a change in flight came to.
pub enum Look<T> {
    /// Not done yet: ask again after a pause.
    Pending,
    /// Not for this caller to settle now (nothing to ask yet, or too little time left).
    Later,
    /// Done: settle with `changes`.
    Done { changes: Changes, seen: T },
    /// It will not be done: settle with `changes`, and answer `error`.
    Failed { changes: Changes, error: Error },
}

/// How a change in flight shows in AgentKit: what [`Driver::poll`] asks of a wake or a sleep.
pub trait Progress<S: AgentStore>: Sync {
    type Seen: Send;
    /// Ask AgentKit once about `record`'s change (unless it was `seen` already).
    async fn look(
        &self,
        driver: &Driver<'_, S>,
        home: &Home,
        record: &AgentRecord,
        seen: Option<Self::Seen>,
    ) -> Look<Self::Seen>;
}

/// Where a poll of a change in flight got to.
#[allow(clippy::large_enum_variant)] // returned once, consumed at once
pub enum Polled<T> {
    Settled {
        record: AgentRecord,
        seen: T,
    },
    /// Still in flight when the poller stopped: the poll lease handed on.
    Pending(AgentRecord),
}

/// Who settles a change: its holder (fenced) or a poll lease holder (by anyone).
pub enum Settler<'h> {
    Holder(&'h mut Held),
    Anyone,
}

/// What a watcher of a change in flight is to do next ([`Watch::next`]).
#[allow(clippy::large_enum_variant)] // returned once, consumed at once
pub enum Step {
    Ended(AgentRecord),
    /// This caller won the gone poller's lease: poll for at most `polling`, then call `next` again.
    Poll {
        record: AgentRecord,
        home: Home,
        polling: Duration,
    },
    /// Awake, its session seen alive moments ago (a wake's answer).
    Awake(AgentRecord),
    /// The caller's wait is over with the change still in flight (202).
    InFlight(AgentRecord),
    /// Nothing to wait for any more: decide again from this record.
    Again(Option<AgentRecord>),
}

/// What the wakes and sleeps of one request (or one agent of a tick) are carried out with.
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

    /// The driver of one change of `key`, answering by `budget.work`, waiting until `budget.wait`.
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
            home: home.map(std::sync::OnceLock::from).unwrap_or_default(),
            ask: self.agentkit.request_timeout(),
        }
    }
}

pub struct Driver<'a, S> {
    pub lock: AgentLock<'a, S>,
    pub settings: &'a WakeSettings,
    pub key: &'a AgentKey,
    registry: &'a ToolRegistry,
    home: std::sync::OnceLock<Home>,
    /// One AgentKit request's timeout: a poll lease covers at least one call.
    ask: Duration,
}

impl<'a, S: AgentStore> Driver<'a, S> {
    pub fn deadline(&self) -> Deadline {
        self.lock.deadline()
    }

    pub fn wait(&self) -> Deadline {
        self.lock.wait()
    }

    /// How many times a caller decides (a lost CAS, a change that ended) before it answers 409.
    pub fn rounds(&self) -> std::ops::Range<u32> {
        0..self.settings.lock.max_rounds.max(1)
    }

    pub fn too_busy(&self) -> Error {
        Error::AgentBusy {
            detail: "too many concurrent changes to the agent; retry".into(),
            retry_after_s: 1,
        }
    }

    /// `record`, if a change that ended moments ago wrote it: its outcome is owed to its pollers.
    pub fn recent<'r>(&self, record: Option<&'r AgentRecord>) -> Option<&'r AgentRecord> {
        record.filter(|r| LockSettings::written_within(r, OUTCOME_KEPT, now_ms()))
    }

    pub fn decide(&self, record: Option<&AgentRecord>, intent: Intent) -> Decision {
        decide(record, now_ms(), intent, &self.settings.lock)
    }

    pub fn seen(&self, record: Option<AgentRecord>) -> AgentRecord {
        record.unwrap_or_else(|| AgentRecord::absent(self.key.clone()))
    }

    /// Where the agent lives: as known, else as `record` says (and known from then on).
    pub fn home(&self, record: &AgentRecord) -> Option<Home> {
        match self.home.get() {
            Some(home) => Some(home.clone()),
            None => home_of(self.registry, record).map(|h| self.home.get_or_init(|| h).clone()),
        }
    }

    /// Where the agent lives, for its holder: known or located (`None`: nowhere; given back).
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
        // Boxed: locating lists the region's Tools and snapshots, a large future.
        let found = Box::pin(found).await?;
        match &found {
            Some(w) => _ = self.home.set(w.home.clone()),
            None => self.lock.give_back_unknown(held).await,
        }
        Ok(found)
    }

    /// A change's lease once sent: never shorter than this caller's wait, lest it pass on mid-poll.
    pub fn lease_until(&self, from_ms: u64, timeout: Duration) -> u64 {
        (from_ms + timeout.as_millis() as u64).max(self.wait().epoch_ms())
    }

    /// Take the agent into `state`. The poll lease starts as long as the holder's request: nobody
    /// polls before it records what it waits for.
    pub async fn acquire(
        &self,
        (state, generation): (WakeState, Generation),
        describe: &Description,
        condition: &Condition,
        seen: Option<&AgentRecord>,
    ) -> Result<Acquired, StoreError> {
        let how = Acquire {
            state,
            generation,
            lease: self.settings.lock.lease,
            describe: Some(describe.clone()),
            poll_until_ms: Some(self.deadline().epoch_ms()),
        };
        self.lock.acquire(self.key, condition, seen, &how).await
    }

    /// Start watching `record` (`joined`: the caller joined its change). Only a check of an awake
    /// record is waited for past the caller's wait: nobody answers 202 for an awake agent.
    pub fn watch(&self, record: AgentRecord, joined: bool, intent: Intent) -> Watch {
        Watch {
            intent,
            joined_fence: joined.then_some(record.fence),
            backoff: self.settings.watching(),
            record: Some(record),
            fresh: true,
            until: self.wait(),
        }
    }

    /// Win the poll lease of `seen`'s change if its poller is gone (`None`: not now).
    async fn take_poll_lease(&self, seen: &AgentRecord) -> Result<Option<Step>, Error> {
        let now = now_ms();
        if self.settings.lock.poll_lease_holds(seen.poll_until_ms, now) || !names_awaited(seen) {
            return Ok(None);
        }
        let Some(home) = self.home(seen) else {
            return Ok(None);
        };
        let polling = self.settings.poll_lease.min(self.wait().remaining());
        let covering = polling.max(self.ask);
        let taken = self
            .lock
            .take_poll_lease(seen, now + covering.as_millis() as u64);
        Ok(match taken.await? {
            Written::Done(record) => Some(Step::Poll {
                record,
                home,
                polling,
            }),
            Written::Lost(_) => None,
        })
    }

    /// Poll `record`'s change at least once, until settled or `until`, then hand the lease on.
    pub async fn poll<P: Progress<S>>(
        &self,
        progress: &P,
        mut settler: Settler<'_>,
        home: &Home,
        record: AgentRecord,
        mut seen: Option<P::Seen>,
        until: Deadline,
    ) -> Result<Polled<P::Seen>, Error> {
        let pace = self.settings.pace();
        loop {
            match progress.look(self, home, &record, seen.take()).await {
                Look::Pending => {}
                Look::Later => break,
                Look::Done { changes, seen } => {
                    let record = self.settle(&mut settler, &record, changes).await;
                    return Ok(Polled::Settled { record, seen });
                }
                Look::Failed { changes, error } => {
                    tracing::warn!(agent = %record.key, %error, "the change failed");
                    self.settle(&mut settler, &record, changes).await;
                    return Err(error);
                }
            }
            let gap = pace.gap(record.awaited_since_ms, now_ms());
            if !until.allows(gap) {
                break;
            }
            tokio::time::sleep(gap).await;
        }
        Ok(Polled::Pending(self.hand_poll_on(&record).await))
    }

    /// Write the end of `record`'s change, letting go; the same end written first by another is as
    /// good. Unconfirmed, the answer shows what this caller saw without a version (no `ETag`).
    pub async fn settle(
        &self,
        settler: &mut Settler<'_>,
        record: &AgentRecord,
        changes: Changes,
    ) -> AgentRecord {
        let changes = super::agent::let_go(changes);
        let written = match settler {
            Settler::Holder(held) => self.lock.write(held, changes.clone()).await,
            Settler::Anyone => {
                let changes = super::agent::on_behalf_of(record, changes.clone());
                let condition = settling(record);
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

    /// Let the next poller in one pause from now: this caller's poll lease covered its own calls.
    pub async fn hand_poll_on(&self, record: &AgentRecord) -> AgentRecord {
        let now = now_ms();
        let gap = self.settings.pace().gap(record.awaited_since_ms, now);
        self.lock
            .hand_poll_lease_on(record, now + gap.as_millis() as u64)
            .await
    }

    /// Give the lock back to rest in `state`. `None`: lost, or failed (logged; the lease lapses).
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

/// A watcher's place: the record last read, the change it follows, and its pauses.
pub struct Watch {
    intent: Intent,
    /// The fence of the change this caller follows (a takeover bumps it).
    joined_fence: Option<u64>,
    backoff: Backoff,
    record: Option<AgentRecord>,
    /// `record` is yet to be looked at (else the next step pauses and reads again).
    fresh: bool,
    until: Deadline,
}

impl Watch {
    pub fn joined(&self) -> bool {
        self.joined_fence.is_some()
    }

    /// Read the record (pausing, but the first time) until it says something for the caller to do.
    pub async fn next<S: AgentStore>(&mut self, driver: &Driver<'_, S>) -> Result<Step, Error> {
        loop {
            if !std::mem::replace(&mut self.fresh, false) {
                if !self.backoff.wait(self.until, Duration::ZERO).await {
                    return Ok(Step::InFlight(driver.seen(self.record.take())));
                }
                self.record = driver.lock.read(driver.key).await?;
            }
            let Some(r) = self.record.clone() else {
                // The record vanished under the change: its holder found nothing of the agent.
                return match self.joined_fence {
                    Some(_) => Err(Error::AgentNotFound),
                    None => Ok(Step::Again(None)),
                };
            };
            if self.joined_fence == Some(r.fence) && !in_flight(&r) {
                return Ok(Step::Ended(r));
            }
            let now = now_ms();
            self.until = driver.wait();
            match decide(Some(&r), now, self.intent, &driver.settings.lock) {
                Decision::Join => {
                    // Follow whichever change is in flight (a takeover bumps the fence).
                    self.joined_fence = Some(r.fence);
                    if let Some(poll) = driver.take_poll_lease(&r).await? {
                        return Ok(poll);
                    }
                }
                Decision::AwaitVerify => {
                    let check_ends =
                        Deadline::after(Duration::from_millis(r.poll_until_ms.saturating_sub(now)));
                    self.until = self.until.max(check_ends.min(driver.deadline()));
                }
                Decision::Awake => return Ok(Step::Awake(r)),
                _ => return Ok(Step::Again(Some(r))),
            }
        }
    }
}

fn in_flight(record: &AgentRecord) -> bool {
    matches!(record.state, WakeState::Waking | WakeState::Sleeping)
}

/// Whether the record names what its change awaits (a session or Resume sent; a snapshot).
fn names_awaited(record: &AgentRecord) -> bool {
    match record.state {
        WakeState::Waking => record.session_id.is_some() || record.resume_sent_at_ms.is_some(),
        WakeState::Sleeping => record.snapshot_id.is_some(),
        _ => false,
    }
}

/// The condition of a write by anyone that settles `record`'s change, and only it.
fn settling(record: &AgentRecord) -> Condition {
    match record.state {
        WakeState::Sleeping => Condition::SleepingWith {
            fence: record.fence,
            snapshot_id: record.snapshot_id.clone().unwrap_or_default(),
        },
        _ => Condition::WakingWith {
            fence: record.fence,
            session_id: record.session_id.clone().unwrap_or_default(),
        },
    }
}
