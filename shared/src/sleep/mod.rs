//! Sleep now (docs/wake-protocol.md, "Sleep now"): snapshot an awake agent, wait until the
//! snapshot is Ready, only then end its session, and record it `asleep`: once, however many
//! callers ask, under the same lock as wakes and deletes.
//!
//! A sleep is one of the two changes the lock's driver carries out (`crate::lock::driver`). The
//! winner ([`holder`]) always asks for a new snapshot (the session may have worked since an
//! earlier attempt's); a poller ends the session only on a Ready snapshot of that very session,
//! while the sleep's lease has time left for it (a wake may take over a lapsed sleep). A
//! snapshot that will not be Ready leaves the agent awake (502, retryable).

mod holder;

use crate::agentkit::types::{DeleteSession, GetSessionSnapshot, Snapshot};
use crate::agentkit::AgentKit;
use crate::deadline::Budget;
use crate::domain::{AgentKey, AgentRecord, Announce, Description, WakeState};
use crate::error::Error;
use crate::locate::Home;
use crate::lock::driver::{Agents, Change, Driver, Look, Watched};
use crate::lock::{Generation, Held, Intent};
use crate::offboarding::Admitted;
use crate::store::{AgentStore, Changes, Condition};
use crate::timestamp::now_ms;

/// What to put to sleep, resolved by the caller (the sleep handler, a tick) beforehand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SleepTarget {
    pub key: AgentKey,
    /// Where the agent lives, when the record says; otherwise the winner locates it.
    pub home: Option<Home>,
    /// Descriptive fields written with the acquire.
    pub describe: Description,
    /// The agent's owner is not being offboarded.
    pub admitted: Admitted,
}

/// How a sleep ended for this caller.
#[allow(clippy::large_enum_variant)] // returned once per request, consumed at once
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SleepOutcome {
    /// No live session: `slept` when this call or a concurrent one ended it, `false` when it
    /// was asleep already.
    Asleep { record: AgentRecord, slept: bool },
    /// The snapshot is still being made at the end of this caller's budget.
    Sleeping { record: AgentRecord },
}

impl<S: AgentStore, K: AgentKit> Agents<'_, S, K> {
    /// Put `target` to sleep, deciding from `record` (the caller's consistent read), waiting
    /// on the snapshot until `budget.wait` and answering by `budget.work`.
    pub async fn sleep(
        &self,
        target: &SleepTarget,
        record: Option<AgentRecord>,
        budget: Budget,
    ) -> Result<SleepOutcome, Error> {
        let driver = self.driver(&target.key, target.home.clone(), budget);
        let sleeping = Sleeping {
            agents: self,
            target,
        };
        driver.run(&sleeping, record).await
    }

    /// Wait for the sleep in flight in `record` as its joiners do, within another change's
    /// run (a wake that found the agent `sleeping`).
    pub(crate) async fn watch_sleep(
        &self,
        driver: &Driver<'_, S>,
        target: &SleepTarget,
        record: AgentRecord,
    ) -> Result<Watched<SleepOutcome>, Error> {
        let sleeping = Sleeping {
            agents: self,
            target,
        };
        driver.watch(&sleeping, record, false).await
    }
}

/// One run of a sleep: the change the driver carries out.
struct Sleeping<'s, 'a, S, K> {
    agents: &'s Agents<'a, S, K>,
    target: &'s SleepTarget,
}

impl<S: AgentStore, K: AgentKit> Change<S> for Sleeping<'_, '_, S, K> {
    type Outcome = SleepOutcome;
    type Seen = Snapshot;

    fn intent(&self) -> Intent {
        Intent::Sleep
    }

    fn acquire(&self) -> (WakeState, Generation, Description) {
        let describe = self.target.describe.clone();
        (WakeState::Sleeping, Generation::Sleep, describe)
    }

    /// A sleep that ended moments ago is how the sleep this caller polls ended: asleep
    /// (answered from the record: a storm of pollers must not each take the lock and ask
    /// AgentKit again), or failed (awake again, the failure kept). Asleep only where the record
    /// places the agent: one it does not (a temporary agent a sleep was refused for) goes to
    /// the holder, which finds out what it is. `slept: false`: the record does not say whether
    /// a sleep or something else left it asleep; the caller that finished the sleep was told.
    fn recent(&self, r: &AgentRecord) -> Option<Result<SleepOutcome, Error>> {
        let placed = r.state != WakeState::Asleep || self.target.home.is_some();
        let answer = self.ended(r).filter(|_| placed)?;
        Some(answer.map(|_| SleepOutcome::Asleep {
            record: r.clone(),
            slept: false,
        }))
    }

    fn ended(&self, r: &AgentRecord) -> Option<Result<SleepOutcome, Error>> {
        match (r.state, &r.error) {
            (WakeState::Asleep, _) => Some(Ok(SleepOutcome::Asleep {
                record: r.clone(),
                slept: true,
            })),
            (WakeState::Awake, Some(error)) => Some(Err(Error::SleepFailed(error.clone()))),
            _ => None,
        }
    }

    fn in_flight(&self, record: AgentRecord) -> SleepOutcome {
        SleepOutcome::Sleeping { record }
    }

    fn settled(&self, record: AgentRecord, _: Snapshot) -> SleepOutcome {
        SleepOutcome::Asleep {
            record,
            slept: true,
        }
    }

    async fn hold(&self, driver: &Driver<'_, S>, held: Held) -> Result<SleepOutcome, Error> {
        self.hold_agent(driver, held).await
    }

    fn named(&self, r: &AgentRecord) -> bool {
        r.snapshot_id.is_some()
    }

    fn by_anyone(&self, r: &AgentRecord) -> Condition {
        Condition::SleepingWith {
            fence: r.fence,
            snapshot_id: r.snapshot_id.clone().unwrap_or_default(),
        }
    }

    /// GetSessionSnapshot of the snapshot the record names: Ready → end the session, then
    /// `asleep`; failed → `awake` again, the session untouched.
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
        let agentkit = self.agents.agentkit;
        let reason = match agentkit.call(&home.region, &req, driver.deadline()).await {
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
                ..Changes::default()
            },
            error: Error::SleepFailed(reason),
        }
    }
}

impl<S: AgentStore, K: AgentKit> Sleeping<'_, '_, S, K> {
    /// The snapshot is Ready: end the session (a NotFound means it has ended already), then
    /// write `asleep` with the snapshot first among the record's summaries.
    async fn end_session(
        &self,
        driver: &Driver<'_, S>,
        home: &Home,
        record: &AgentRecord,
        session_id: &str,
        snapshot: Snapshot,
    ) -> Look<Snapshot> {
        // The DeleteSession must be over (answered or given up) while the lease still holds.
        let skew = self.agents.settings.lock.skew_margin.as_millis() as u64;
        let lease_left_ms = record.lease_until_ms.saturating_sub(now_ms() + skew);
        let within = driver
            .deadline()
            .min_after(std::time::Duration::from_millis(lease_left_ms));
        if !within.allows(self.agents.agentkit.request_timeout()) {
            tracing::warn!(agent = %record.key, "sleep: too little of the lease is left to end the session");
            return Look::Later;
        }
        let req = DeleteSession {
            tool_id: home.tool_id.clone(),
            session_id: session_id.to_string(),
        };
        match self.agents.agentkit.call(&home.region, &req, within).await {
            Err(e) if !e.is_not_found() => {
                // The snapshot is Ready; the next caller ends the session (DeleteSession is
                // idempotent).
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
            announce: Some(crate::events::announcement(Announce::Asleep)),
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
