//! After the Resume (steps 7 and 8): its session recorded at once and polled until Ready, or,
//! its outcome unknown, the lock kept and the session adopted or looked for by the next caller.

use crate::agentkit::types::Snapshot;
use crate::agentkit::AgentKit;
use crate::deadline::Deadline;
use crate::error::Error;
use crate::locate::Home;
use crate::lock::driver::{Carried, Driver, Settler};
use crate::lock::{Held, Written};
use crate::store::{AgentStore, Changes};
use crate::timestamp::now_ms;
use crate::wake::{WakeOutcome, Waking};

use super::reconcile::snapshot_metadata;
use super::Recorded;

impl<S: AgentStore, K: AgentKit> Waking<'_, '_, S, K> {
    /// The lease once a Resume is on its way: the readiness timeout from `from_ms`, and never
    /// shorter than this request's own wait (the holder is still polling until then; a lease
    /// that ended first would hand its wake to another caller mid-poll).
    fn ready_lease_until(&self, from_ms: u64, wait: Deadline) -> u64 {
        let ready = from_ms + self.wake.settings.ready_timeout.as_millis() as u64;
        ready.max(wait.epoch_ms())
    }

    /// Record the session at once (fenced; lease extended to the readiness timeout), then poll
    /// it until Ready within the wait (a short request: once). The record says the boot began
    /// now, and that nobody else asks AgentKit while this caller does; when it stops asking,
    /// it hands the poll lease on for the pace's pause.
    pub(super) async fn record_and_poll(
        &self,
        driver: &Driver<'_, S>,
        mut held: Held,
        home: &Home,
        recorded: Recorded,
        snapshots: Vec<Snapshot>,
    ) -> Result<WakeOutcome, Error> {
        let wait = driver.wait();
        let now = now_ms();
        let asking = self.wake.agentkit.request_timeout().as_millis() as u64;
        let changes = Changes {
            session_id: Some(Some(recorded.session_id.clone())),
            snapshot_id: Some(recorded.snapshot_id.clone()),
            resume_sent_at_ms: Some(None),
            lease_until_ms: Some(self.ready_lease_until(now, wait)),
            poll_until_ms: Some(wait.epoch_ms().max(now + asking)),
            awaited_since_ms: Some(now),
            describe: Some(home.description()),
            ..Changes::default()
        };
        let record = match driver.lock.write(&mut held, changes).await? {
            Written::Done(r) => r,
            Written::Lost(r) => return Box::pin(self.follow(driver, r)).await,
        };
        let holder = Settler::Holder(&mut held);
        let polled = driver.poll(self, holder, home, record, recorded.seen, wait);
        Ok(match Box::pin(polled).await? {
            Carried::Settled { record, seen } => WakeOutcome::Awake {
                session: seen,
                resumed: recorded.resumed,
                record,
                snapshots,
            },
            Carried::Pending(record) => WakeOutcome::Waking { record },
        })
    }

    /// A Resume whose outcome is unknown: the lock stays held (its lease already covers the
    /// readiness timeout, `resume_sent_at` is recorded). A session that already shows up is
    /// adopted at once; otherwise pollers may look for it as soon as this request ends.
    pub(super) async fn unknown_resume(
        &self,
        driver: &Driver<'_, S>,
        held: Held,
        home: &Home,
        listing: &[Snapshot],
    ) -> Result<WakeOutcome, Error> {
        let metadata = snapshot_metadata(listing, held.record.snapshot_id.as_deref());
        let sent = held.record.resume_sent_at_ms;
        let found = self
            .find_started(home, sent, &metadata, driver.deadline())
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
            return Box::pin(self.record_and_poll(driver, held, home, recorded, snapshots)).await;
        }
        Box::pin(self.hand_over(driver, held)).await
    }

    /// Keep the lock, with its Resume unaccounted for, and let whoever asks next look for the
    /// session it started (a poll lease, `watch.rs`): this caller answers 202.
    pub(super) async fn hand_over(
        &self,
        driver: &Driver<'_, S>,
        mut held: Held,
    ) -> Result<WakeOutcome, Error> {
        // The record names the agent's Tool already (the write before the Resume did), so
        // pollers know where to look.
        let sent = held.record.resume_sent_at_ms.unwrap_or_else(now_ms);
        let changes = Changes {
            poll_until_ms: Some(0),
            lease_until_ms: Some(self.ready_lease_until(sent, driver.wait())),
            ..Changes::default()
        };
        match driver.lock.write(&mut held, changes).await {
            Ok(Written::Done(r)) => Ok(WakeOutcome::Waking { record: r }),
            Ok(Written::Lost(r)) => Box::pin(self.follow(driver, r)).await,
            Err(e) => {
                tracing::warn!(agent = %held.key, error = %e, "could not hand polling over");
                Ok(WakeOutcome::Waking {
                    record: held.record,
                })
            }
        }
    }
}
