//! An `awake` record not verified lately: one caller wins a poll lease and asks GetSession
//! once; the others wait for its verdict (a fresh `verified_at_ms`, or a new wake if the
//! session had ended). The poll lease is written before the check, and the verification after
//! it: were the check's own write the verification, a caller arriving in between would answer
//! with a session that had in fact ended (docs/wake-protocol.md).

use crate::agentkit::AgentKit;
use crate::domain::{AgentRecord, SessionPhase};
use crate::error::Error;
use crate::locate::sessions::session;
use crate::lock::driver::{Driver, Watched};
use crate::lock::{Acquired, Written};
use crate::store::{AgentStore, Changes, Condition};
use crate::timestamp::now_ms;

use super::{WakeOutcome, Waking};

impl<S: AgentStore, K: AgentKit> Waking<'_, '_, S, K> {
    /// Check an awake record's session once, as the winner of its poll lease.
    pub(super) async fn verify(
        &self,
        driver: &Driver<'_, S>,
        seen: AgentRecord,
    ) -> Result<Watched<WakeOutcome>, Error> {
        let deadline = driver.deadline();
        let lease = self.wake.settings.poll_lease.min(deadline.remaining());
        let until_ms = now_ms() + lease.as_millis() as u64;
        let record = match driver.lock.take_poll_lease(&seen, until_ms).await? {
            Written::Done(r) => r,
            Written::Lost(r) => return Ok(Watched::Again(r)),
        };
        let found = match (driver.home(&record), &record.session_id) {
            (Some(home), Some(id)) => session(self.wake.agentkit, &home, id, deadline).await?,
            _ => None,
        };
        match found {
            // Nobody knows what it is doing: never wake beside it.
            Some(s) if s.phase() == SessionPhase::Unknown => {
                let back = Changes {
                    poll_until_ms: Some(0),
                    ..Changes::default()
                };
                if let Err(e) = driver.lock.write_seen(&record, back).await {
                    tracing::info!(agent = %record.key, error = %e, "could not give the poll lease back");
                }
                Err(Error::unknown_status("session", s.status.as_deref()))
            }
            Some(s) if s.is_active() => {
                let changes = Changes {
                    verified_at_ms: s.is_usable().then(now_ms),
                    session_expire_at: s.expire_at.clone().map(Some),
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
}
