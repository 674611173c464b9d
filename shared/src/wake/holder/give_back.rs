//! Letting the lock go: a failed wake recorded (the snapshot untouched), the agent given back
//! asleep with nothing woken, the Resume marker taken back, and a lost lock followed.

use crate::agentkit::AgentKit;
use crate::domain::failure::recorded_failure;
use crate::domain::WakeState;
use crate::error::Error;
use crate::http::problem::Problem;
use crate::locate::Home;
use crate::lock::{AgentLock, Held, Written};
use crate::store::{AgentStore, Changes};
use crate::wake::watch::Watched;
use crate::wake::{Wake, WakeOutcome, WakeTarget};

impl<S: AgentStore, K: AgentKit> Wake<'_, S, K> {
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
    pub(super) async fn fail_on(
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
            announce: Some(crate::domain::Announce::WakeFailed),
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
    pub(super) async fn take_back_marker(
        &self,
        lock: &AgentLock<'_, S>,
        held: &mut Held,
        home: &Home,
    ) {
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

    /// Give the lock back with nothing woken: the agent rests asleep.
    pub(super) async fn give_back(&self, lock: &AgentLock<'_, S>, held: &mut Held, home: &Home) {
        if let Err(e) = release_asleep(lock, held, home).await {
            tracing::warn!(agent = %held.key, error = %e, "could not give the lock back");
        }
    }
}

/// Give the lock back with nothing woken and no Resume on its way: the agent rests asleep where
/// `home` says it lives.
pub(super) async fn release_asleep<S: AgentStore>(
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
