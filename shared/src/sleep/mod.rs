//! Sleep now (docs/wake-protocol.md, "Sleep now"): snapshot an awake agent, wait until the snapshot
//! is Ready, only then end its session and record it `asleep`, once however many callers ask.
//!
//! The session ends only on a Ready snapshot of that very session, while the lease has time left; a
//! snapshot never Ready leaves the agent awake (502).

mod holder;

use std::ops::ControlFlow;

use crate::agentkit::types::{DeleteSession, GetSessionSnapshot, Snapshot};
use crate::agentkit::AgentKit;
use crate::ambient::now_ms;
use crate::domain::{AgentKey, AgentRecord, Announce, Description, WakeState};
use crate::error::Error;
use crate::invocation::Budget;
use crate::locate::Home;
use crate::lock::agent::{Agents, Driver, Look, Polled, Progress, Settler, Step};
use crate::lock::{Acquired, Decision, Generation, Intent, WakeSettings};
use crate::offboarding::Admitted;
use crate::store::{AgentStore, Changes};

/// What to put to sleep, resolved by the caller (the sleep handler, a tick) beforehand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SleepTarget {
    pub key: AgentKey,
    /// Where the agent lives, when the record says; otherwise the winner locates it.
    pub home: Option<Home>,
    pub describe: Description,
    /// The agent's owner is not being offboarded.
    pub admitted: Admitted,
    /// An idle sleep's: take the agent only while it is awake and idle by this instant (epoch
    /// ms), so activity written since, even between the caller's read and the lock, keeps it
    /// awake (docs/idle.md). `None`: a sleep asked for.
    pub idle_by_ms: Option<u64>,
}

/// How a sleep ended for this caller.
#[allow(clippy::large_enum_variant)] // returned once per request, consumed at once
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SleepOutcome {
    /// No live session; `slept` unless it was asleep already.
    Asleep { record: AgentRecord, slept: bool },
    /// The snapshot is still being made at the end of this caller's budget.
    Sleeping { record: AgentRecord },
}

impl<S: AgentStore, K: AgentKit> Agents<'_, S, K> {
    /// Put `target` to sleep, deciding from `record` (the caller's consistent read).
    pub async fn sleep(
        &self,
        target: &SleepTarget,
        record: Option<AgentRecord>,
        budget: Budget,
    ) -> Result<SleepOutcome, Error> {
        let sleeping = Sleeping {
            agents: self,
            target,
            driver: self.driver(&target.key, target.home.clone(), budget),
        };
        sleeping.run(record).await
    }
}

impl SleepTarget {
    /// Whether `record` may be taken for this sleep: always, unless it is an idle sleep and the
    /// agent was used (or woken) since its idle time. A sleep in flight whose holder is gone is
    /// taken over and driven on, as any sleep's: that starts nothing new.
    fn may_take(&self, record: Option<&AgentRecord>) -> bool {
        let Some(by) = self.idle_by_ms else {
            return true;
        };
        record.is_some_and(|r| match r.state {
            WakeState::Sleeping => true,
            WakeState::Awake => r.idle_at_ms.is_some_and(|at| at <= by),
            _ => false,
        })
    }
}

struct Sleeping<'s, 'a, S, K> {
    agents: &'s Agents<'a, S, K>,
    target: &'s SleepTarget,
    driver: Driver<'s, S>,
}

/// What a step of the sleep came to: an answer, or a record to decide from again.
type Next = ControlFlow<SleepOutcome, Option<AgentRecord>>;

impl<S: AgentStore, K: AgentKit> Sleeping<'_, '_, S, K> {
    /// The sleep (docs/wake-protocol.md, "Sleep now"):
    ///
    /// 1. A sleep that ended moments ago is the answer (where the record places the agent): a storm
    ///    of pollers must not each take the lock.
    /// 2. Decide from the record, a few rounds at most: a tombstone: 410; another operation holds
    ///    it: 409; nobody holds it: acquire and **hold** it through the sleep ([`holder`]); a sleep
    ///    in flight: **watch** it ([`watch`]).
    /// 3. Out of rounds (every CAS lost): 409.
    async fn run(&self, mut record: Option<AgentRecord>) -> Result<SleepOutcome, Error> {
        let driver = &self.driver;
        if let Some(r) = driver.recent(record.as_ref()) {
            let placed = r.state != WakeState::Asleep || self.target.home.is_some();
            if let Some(answer) = ended(r).filter(|_| placed) {
                return answer.map(|_| SleepOutcome::Asleep {
                    record: r.clone(),
                    slept: false,
                });
            }
        }
        for _ in driver.rounds() {
            let next = match driver.decide(record.as_ref(), Intent::Sleep) {
                Decision::Gone => return Err(Error::AgentGone),
                Decision::Busy {
                    state,
                    retry_after_s,
                } => return Err(Error::held_by(state, retry_after_s)),
                Decision::Acquire(_) if !self.target.may_take(record.as_ref()) => {
                    return Err(Error::NotAwake("used since it became idle".into()));
                }
                Decision::Acquire(condition) => {
                    let how = (WakeState::Sleeping, Generation::Sleep);
                    let describe = &self.target.describe;
                    match driver
                        .acquire(how, describe, &condition, record.as_ref())
                        .await?
                    {
                        // Boxed: the holder's path is a large future.
                        Acquired::Held(held) => return Box::pin(self.hold(*held)).await,
                        Acquired::Lost(r) => Next::Continue(r),
                    }
                }
                Decision::Join => {
                    watch(driver, self.agents, driver.seen(record.take()), true).await?
                }
                other => {
                    return Err(Error::Internal(format!("a sleep was answered {other:?}")));
                }
            };
            match next {
                Next::Break(outcome) => return Ok(outcome),
                Next::Continue(r) => record = r,
            }
        }
        Err(driver.too_busy())
    }

    fn progress(&self) -> Snapshotting<'_, K> {
        Snapshotting {
            agentkit: self.agents.agentkit,
            settings: self.agents.settings,
        }
    }
}

/// How a sleep ended, by the record it wrote: asleep, or failed (awake again with its error).
fn ended(r: &AgentRecord) -> Option<Result<SleepOutcome, Error>> {
    match (r.state, &r.error) {
        (WakeState::Asleep, _) => Some(Ok(SleepOutcome::Asleep {
            record: r.clone(),
            slept: true,
        })),
        (WakeState::Awake, Some(error)) => Some(Err(Error::SleepFailed(error.clone()))),
        _ => None,
    }
}

/// Watch the sleep in flight in `record` until it ends, the wait is over (202), or nothing is left
/// to wait for; a wake that found the agent `sleeping` watches it too.
pub(crate) async fn watch<S: AgentStore, K: AgentKit>(
    driver: &Driver<'_, S>,
    agents: &Agents<'_, S, K>,
    record: AgentRecord,
    joined: bool,
) -> Result<Next, Error> {
    let progress = Snapshotting {
        agentkit: agents.agentkit,
        settings: agents.settings,
    };
    let mut watch = driver.watch(record, joined, Intent::Sleep);
    loop {
        match watch.next(driver).await? {
            Step::Ended(r) => {
                return match ended(&r) {
                    Some(answer) => answer.map(Next::Break),
                    None => Ok(Next::Continue(Some(r))),
                }
            }
            Step::InFlight(record) => return Ok(Next::Break(SleepOutcome::Sleeping { record })),
            Step::Awake(r) => return Ok(Next::Continue(Some(r))),
            Step::Again(r) => return Ok(Next::Continue(r)),
            Step::Poll {
                record,
                home,
                polling,
            } => {
                let until = driver.wait().min_after(polling);
                let polled = driver.poll(&progress, Settler::Anyone, &home, record, None, until);
                if let Polled::Settled { record, .. } = polled.await? {
                    return Ok(Next::Break(SleepOutcome::Asleep {
                        record,
                        slept: true,
                    }));
                }
            }
        }
    }
}

/// How a sleep progresses, as AgentKit shows it: its snapshot, then its session ended.
struct Snapshotting<'k, K> {
    agentkit: &'k K,
    settings: &'k WakeSettings,
}

impl<S: AgentStore, K: AgentKit> Progress<S> for Snapshotting<'_, K> {
    type Seen = Snapshot;

    /// GetSessionSnapshot: Ready → end the session, then `asleep`; failed → `awake` again.
    async fn look(
        &self,
        driver: &Driver<'_, S>,
        home: &Home,
        record: &AgentRecord,
        _: Option<Snapshot>,
    ) -> Look<Snapshot> {
        let (Some(session_id), Some(snapshot_id)) = (&record.session_id, &record.snapshot_id)
        else {
            return Look::Later;
        };
        let req = GetSessionSnapshot {
            snapshot_id: snapshot_id.clone(),
            tool_id: home.tool_id.clone(),
        };
        let reason = match self
            .agentkit
            .call(&home.region, &req, driver.deadline())
            .await
        {
            Ok(r) if r.snapshot.is_wakeable() => {
                return self
                    .end_session(driver, home, record, session_id, r.snapshot)
                    .await
            }
            Ok(r) if r.snapshot.is_in_progress() => return Look::Pending,
            Ok(r) => format!(
                "the snapshot ended {} instead of Ready",
                r.snapshot.status.as_deref().unwrap_or("no status")
            ),
            Err(e) if e.is_not_found() => "the snapshot disappeared before it was Ready".into(),
            // AgentKit did not answer this time: the next poll may (within the budget).
            Err(e) => {
                tracing::info!(agent = %record.key, error = %e, "snapshot poll failed; polling on");
                return Look::Pending;
            }
        };
        Look::Failed {
            changes: Changes {
                state: Some(WakeState::Awake),
                error: Some(Some(reason.clone())),
                // Awake again: an idle sleep is tried again an idle time later, not each minute.
                idle_at_ms: Some(self.settings.idle.idle_at(record, now_ms())),
                ..Changes::default()
            },
            error: Error::SleepFailed(reason),
        }
    }
}

impl<K: AgentKit> Snapshotting<'_, K> {
    /// Ready: end the session, then write `asleep`, this snapshot first in the summaries.
    async fn end_session<S: AgentStore>(
        &self,
        driver: &Driver<'_, S>,
        home: &Home,
        record: &AgentRecord,
        session_id: &str,
        snapshot: Snapshot,
    ) -> Look<Snapshot> {
        // The DeleteSession must be over (answered or given up) while the lease still holds.
        let skew = self.settings.lock.skew_margin.as_millis() as u64;
        let lease_left_ms = record.lease_until_ms.saturating_sub(now_ms() + skew);
        let within = driver
            .deadline()
            .min_after(std::time::Duration::from_millis(lease_left_ms));
        if !within.allows(self.agentkit.request_timeout()) {
            tracing::warn!(agent = %record.key, "sleep: too little of the lease is left to end the session");
            return Look::Later;
        }
        let req = DeleteSession {
            tool_id: home.tool_id.clone(),
            session_id: session_id.to_string(),
        };
        match self.agentkit.call(&home.region, &req, within).await {
            Err(e) if !e.is_not_found() => {
                // Ready: the next caller ends the session (DeleteSession is idempotent).
                tracing::warn!(agent = %record.key, error = %e, "sleep: the session could not be ended yet");
                return Look::Later;
            }
            _ => {}
        }
        tracing::info!(agent = %record.key, "sleep: asleep");
        let mut summaries = vec![crate::view::snapshot_view(&snapshot)];
        summaries.extend(
            record
                .snapshots
                .iter()
                .filter(|s| Some(&s.snapshot_id) != snapshot.snapshot_id.as_ref())
                .cloned(),
        );
        let changes = Changes {
            state: Some(WakeState::Asleep),
            announce: Some(crate::invocation::announcement(Announce::Asleep)),
            session_id: Some(None),
            session_expire_at: Some(None),
            session_created_at: Some(None),
            verified_at_ms: Some(0),
            error: Some(None),
            snapshots: Some(summaries),
            ..Changes::default()
        };
        Look::Done {
            changes,
            seen: snapshot,
        }
    }
}
