//! Sleep now (docs/wake-protocol.md, "Sleep now"): snapshot an awake agent, wait until the snapshot
//! is Ready, only then end its session, and record it `asleep` — once, however many callers ask,
//! under the same lock as wakes and deletes.
//!
//! Every caller reads the record and decides ([`crate::lock::decide`], intent `Sleep`):
//!
//! - **acquire** (awake, asleep, failed, missing, an expired lease): the winner holds the agent
//!   as `sleeping` ([`holder`]). It finds the live session (none: the agent is asleep already),
//!   sends CreateSessionSnapshot (always: an earlier attempt whose lease lapsed may have asked
//!   for a snapshot, but the session may have worked since, so that one is never adopted),
//!   names the snapshot in the record (fenced), and waits for it ([`finish`]);
//! - **join** (a sleep in flight): watch the record; once the holder's request has ended, the
//!   winner of a short poll lease carries the sleep on by anyone, exactly as the holder would.
//!   This is the only way a snapshot asked for by another caller is waited on and the session
//!   ended on it: while that sleep's lease is live;
//! - **busy** (a wake, a delete or a create holds the agent): 409.
//!
//! A wake that finds the agent `sleeping` waits for the sleep the same way (and may carry it
//! on), then wakes it from the new snapshot; a delete answers 409. A snapshot that will not
//! become Ready leaves the agent awake (502, retryable); one still being made when the
//! request's budget ends is a 202, continued by the next call.
//!
//! Files: `mod.rs` (this: target, outcome, the decision loop, joiners), `holder.rs` (the
//! winner's path), `finish.rs` (the end of a sleep, which anyone may carry out).

mod finish;
mod holder;

use std::time::Duration;

use crate::agentkit::types::Snapshot;
use crate::agentkit::AgentKit;
use crate::deadline::Budget;
use crate::domain::{AgentKey, AgentRecord, Description, ToolRegistry, WakeState};
use crate::error::Error;
use crate::locate::{home_of, Home};
use crate::lock::{
    decide, Acquire, Acquired, AgentLock, Decision, Generation, Intent, LockSettings, Written,
};
use crate::store::AgentStore;
use crate::timestamp::now_ms;

pub(crate) use finish::{Finish, Finished, Settler};

/// What to put to sleep, resolved by the caller (the sleep handler) beforehand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SleepTarget {
    pub key: AgentKey,
    /// Where the agent lives, when the record says; otherwise the winner locates it.
    pub home: Option<Home>,
    /// Descriptive fields written with the acquire.
    pub describe: Description,
}

/// How a sleep ended for this caller.
#[allow(clippy::large_enum_variant)] // returned once per request, consumed at once
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SleepOutcome {
    /// No live session: `slept` when this call or a concurrent one ended it (`snapshot` is
    /// the snapshot it took, when this caller saw it), `false` when it was asleep already.
    Asleep {
        record: AgentRecord,
        slept: bool,
        snapshot: Option<Snapshot>,
    },
    /// The snapshot is still being made at the end of this caller's budget; a later call
    /// continues from the record.
    Sleeping { record: AgentRecord },
}

/// Timings of a sleep: the wake's, less what only a wake uses (`WakeSettings::sleep` derives
/// them, so a sleep and a wake of one agent keep one lease discipline).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SleepSettings {
    /// The lock: the lease an acquire takes, the skew margin, the rounds.
    pub lock: LockSettings,
    /// Polling of the snapshot starts at `poll_min` and backs off to `poll_max`.
    pub poll_min: Duration,
    pub poll_max: Duration,
    /// Callers of a sleep in flight re-read the record from `watch_min` to `watch_max`.
    pub watch_min: Duration,
    pub watch_max: Duration,
    /// How long a poll lease (taken once the holder's request ended) lasts.
    pub poll_lease: Duration,
    /// The lease of a sleep once its snapshot is taken: how long a snapshot may take to
    /// become Ready before another caller may take the sleep over.
    pub snapshot_timeout: Duration,
}

impl SleepSettings {
    /// The back-off of asking AgentKit again after a listing failed.
    pub fn polling(&self) -> crate::deadline::Backoff {
        crate::deadline::Backoff::new(self.poll_min, self.poll_max)
    }

    /// How often a snapshot being made is asked about, by whoever asks.
    pub fn pace(&self) -> crate::deadline::Pace {
        crate::deadline::Pace {
            min: self.poll_min,
            max: self.poll_max,
        }
    }

    /// The back-off of watching the record.
    pub fn watching(&self) -> crate::deadline::Backoff {
        crate::deadline::Backoff::new(self.watch_min, self.watch_max)
    }
}

/// One caller's sleep of one agent.
pub struct Sleep<'a, S, K> {
    store: &'a S,
    agentkit: &'a K,
    registry: &'a ToolRegistry,
    settings: SleepSettings,
}

/// The end of a watch of a sleep in flight.
type Watched = crate::lock::Watched<SleepOutcome>;

impl<'a, S: AgentStore, K: AgentKit> Sleep<'a, S, K> {
    pub fn new(
        store: &'a S,
        agentkit: &'a K,
        registry: &'a ToolRegistry,
        settings: SleepSettings,
    ) -> Self {
        Sleep {
            store,
            agentkit,
            registry,
            settings,
        }
    }

    /// Put `target` to sleep, deciding from `record` (the caller's consistent read), waiting
    /// on the snapshot until `budget.wait` and answering by `budget.work`.
    pub async fn run(
        &self,
        target: &SleepTarget,
        mut record: Option<AgentRecord>,
        budget: Budget,
    ) -> Result<SleepOutcome, Error> {
        let lock = AgentLock::within(self.store, &self.settings.lock, budget);
        let deadline = budget.work;
        // A sleep that ended moments ago is how the sleep this caller polls ended: asleep
        // (answered from the record: a storm of pollers must not each take the lock and ask
        // AgentKit again), or failed (awake again, the failure kept).
        if let Some(r) = record.as_ref() {
            let kept = crate::domain::failure::OUTCOME_KEPT;
            let recent = LockSettings::written_within(r, kept, now_ms());
            if let (WakeState::Awake, Some(error), true) = (r.state, r.error.as_ref(), recent) {
                return Err(Error::SleepFailed(error.clone()));
            }
            // Only where the record places the agent: one it does not (a temporary agent a
            // sleep was refused for) goes to the holder, which finds out what it is.
            let placed = target.home.is_some();
            if placed && r.state == WakeState::Asleep && recent {
                // `slept: false`: the record does not say whether a sleep or something else
                // left it asleep; the caller that finished the sleep was told `true`.
                return Ok(SleepOutcome::Asleep {
                    record: r.clone(),
                    slept: false,
                    snapshot: None,
                });
            }
        }
        for _ in 0..self.settings.lock.max_rounds.max(1) {
            match decide(
                record.as_ref(),
                now_ms(),
                Intent::Sleep,
                &self.settings.lock,
            ) {
                Decision::Gone => return Err(Error::AgentGone),
                Decision::Busy {
                    state,
                    retry_after_s,
                } => return Err(Error::held_by(state, retry_after_s)),
                Decision::Join => {
                    let r = record
                        .take()
                        .unwrap_or_else(|| AgentRecord::absent(target.key.clone()));
                    match Box::pin(self.watch(&lock, target, r)).await? {
                        Watched::Done(outcome) => return Ok(outcome),
                        Watched::Again(r) => record = r,
                    }
                }
                Decision::Acquire(condition) => {
                    let how = Acquire {
                        state: WakeState::Sleeping,
                        generation: Generation::Sleep,
                        lease: self.settings.lock.lease,
                        describe: Some(target.describe.clone()),
                        poll_until_ms: Some(deadline.epoch_ms()),
                    };
                    match lock
                        .acquire(&target.key, &condition, record.as_ref(), &how)
                        .await?
                    {
                        Acquired::Held(held) => {
                            return Box::pin(self.hold(&lock, target, *held)).await;
                        }
                        Acquired::Lost(r) => record = r,
                    }
                }
                // A sleep is never told to trust, verify or wait for another intent: an awake
                // record is acquired by a CAS like any other.
                Decision::Awake
                | Decision::Verify
                | Decision::AwaitVerify
                | Decision::AwaitSleep => {
                    return Err(Error::Internal(
                        "the lock answered a sleep with a wake's decision".into(),
                    ))
                }
            }
        }
        Err(Error::AgentBusy {
            detail: "too many concurrent changes to the agent; retry".into(),
            retry_after_s: 1,
        })
    }

    /// Watch a sleep in flight until it settles, the budget ends (202), or there is nothing
    /// left to wait for. Once the holder's request has ended, the winner of a poll lease
    /// carries it on.
    async fn watch(
        &self,
        lock: &AgentLock<'_, S>,
        target: &SleepTarget,
        record: AgentRecord,
    ) -> Result<Watched, Error> {
        let wait = lock.wait();
        let mut joined = record.fence;
        let mut backoff = self.settings.watching();
        let mut current = Some(record);
        loop {
            let Some(r) = current.take() else {
                return Ok(Watched::Again(None));
            };
            if r.fence == joined {
                match r.state {
                    WakeState::Asleep => {
                        return Ok(Watched::Done(SleepOutcome::Asleep {
                            record: r,
                            slept: true,
                            snapshot: None,
                        }))
                    }
                    WakeState::Awake if r.error.is_some() => {
                        return Err(Error::SleepFailed(r.error.unwrap_or_default()))
                    }
                    _ => {}
                }
            }
            let now = now_ms();
            match decide(Some(&r), now, Intent::Sleep, &self.settings.lock) {
                Decision::Join => {
                    // Follow whichever sleep is in flight (a takeover bumps the fence).
                    joined = r.fence;
                    if let Some(settled) = Box::pin(self.carry_on(lock, target, &r)).await? {
                        return Ok(Watched::Done(settled));
                    }
                }
                _ => return Ok(Watched::Again(Some(r))),
            }
            if !backoff.wait(wait, Duration::ZERO).await {
                return Ok(Watched::Done(SleepOutcome::Sleeping { record: r }));
            }
            current = lock.read(&target.key).await?;
        }
    }

    /// Carry on a sleep whose holder's request has ended, as the winner of its poll lease.
    async fn carry_on(
        &self,
        lock: &AgentLock<'_, S>,
        target: &SleepTarget,
        seen: &AgentRecord,
    ) -> Result<Option<SleepOutcome>, Error> {
        let home = target.home.clone().or_else(|| home_of(self.registry, seen));
        let Some(home) = home else { return Ok(None) };
        let finished = carry_on(lock, self.agentkit, &self.settings, &home, seen).await?;
        Ok(match finished {
            Some(Finished::Asleep { record, snapshot }) => Some(SleepOutcome::Asleep {
                record,
                slept: true,
                snapshot: Some(snapshot),
            }),
            Some(Finished::Failed(reason)) => return Err(Error::SleepFailed(reason)),
            Some(Finished::Pending(_)) | None => None,
        })
    }
}

/// If the poller of the sleep `seen` is gone and the sleep names its snapshot, win the poll
/// lease and carry the sleep on: one poll, then on until the caller's wait ends (at most a
/// poll lease). `None`: somebody else polls, or there is nothing to poll yet. The lease covers
/// this caller's own calls (one AgentKit request timeout at least: ending the session comes
/// after the poll); done without an answer, it hands the lease on for the pace's pause, so a
/// storm of short requests asks AgentKit at one poller's pace. Wakes waiting for a sleep use
/// this too.
pub(crate) async fn carry_on<S: AgentStore, K: AgentKit>(
    lock: &AgentLock<'_, S>,
    agentkit: &K,
    settings: &SleepSettings,
    home: &Home,
    seen: &AgentRecord,
) -> Result<Option<Finished>, Error> {
    let now = now_ms();
    let poller_gone = !settings.lock.poll_lease_holds(seen.poll_until_ms, now);
    if !poller_gone || seen.snapshot_id.is_none() {
        return Ok(None);
    }
    let polling = settings.poll_lease.min(lock.wait().remaining());
    let covering = polling.max(agentkit.request_timeout());
    let record = match lock
        .take_poll_lease(seen, now + covering.as_millis() as u64)
        .await?
    {
        Written::Done(r) => r,
        Written::Lost(_) => return Ok(None),
    };
    let finish = Finish {
        lock,
        agentkit,
        settings,
        home,
    };
    let until = lock.wait().min_after(polling);
    // Boxed: finishing a sleep is a large future (debug builds run it on a worker's stack).
    let finished = Box::pin(finish.run(Settler::Anyone, record, until)).await?;
    if let Finished::Pending(record) = &finished {
        // Done asking: the next poller may ask one pause of the pace from now.
        let now = now_ms();
        let gap = settings.pace().gap(record.awaited_since_ms, now);
        lock.hand_poll_lease_on(record, now + gap.as_millis() as u64)
            .await;
    }
    Ok(Some(finished))
}
