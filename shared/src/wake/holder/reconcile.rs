//! Step 2, reconcile before resuming: a session an earlier holder of this wake started (found
//! by UserSessionId, or the one unclaimed session an unknown Resume left), a session stuck
//! starting ended first, and a reconcile that could not finish.

use crate::agentkit::types::{DeleteSession, MetadataEntry, Session, Snapshot};
use crate::agentkit::AgentKit;
use crate::deadline::Deadline;
use crate::domain::SessionPhase;
use crate::error::Error;
use crate::locate::sessions::{live_session, session};
use crate::locate::Home;
use crate::lock::driver::Driver;
use crate::lock::Held;
use crate::store::AgentStore;
use crate::wake::{WakeOutcome, Waking};

impl<S: AgentStore, K: AgentKit> Waking<'_, '_, S, K> {
    /// A session this wake's earlier holders started: by UserSessionId, or for an agent
    /// without one after an unknown Resume (`resume_sent_at`), the one unclaimed session it
    /// left (recognised by `metadata` too, when known).
    pub(in crate::wake) async fn find_started(
        &self,
        home: &Home,
        resume_sent_at_ms: Option<u64>,
        metadata: &[MetadataEntry],
        deadline: Deadline,
    ) -> Result<Option<Session>, Error> {
        let agents = self.agents;
        match (self.target.user_session_id(), resume_sent_at_ms) {
            (Some(usid), _) => Ok(live_session(agents.agentkit, home, usid, deadline).await?),
            (None, Some(sent)) => {
                // AgentKit writes whole seconds; allow for that and for clocks a little apart.
                let margin = agents.settings.lock.skew_margin.as_millis() as u64 + 1000;
                crate::locate::claims::adopt_orphan(
                    &agents.store,
                    agents.agentkit,
                    home,
                    &self.target.key,
                    sent,
                    margin,
                    metadata,
                    deadline,
                )
                .await
            }
            (None, None) => Ok(None),
        }
    }

    /// End a session that stayed starting past its readiness timeout, and confirm it is gone
    /// before anything is resumed beside it.
    pub(super) async fn end_stuck(
        &self,
        home: &Home,
        session_id: &str,
        deadline: Deadline,
    ) -> Result<(), Error> {
        tracing::warn!(
            session_id,
            "wake: ending a session stuck starting before resuming again"
        );
        let request = DeleteSession {
            tool_id: home.tool_id.clone(),
            session_id: session_id.to_string(),
        };
        match self
            .agents
            .agentkit
            .call(&home.region, &request, deadline)
            .await
        {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        match session(self.agents.agentkit, home, session_id, deadline).await? {
            None => Ok(()),
            Some(s) if s.phase() == SessionPhase::Ended => Ok(()),
            Some(_) => Err(Error::SessionStuck(format!(
                "session {session_id} is being ended; it was still starting after the readiness timeout"
            ))),
        }
    }

    /// A reconcile that could not finish. A Resume still unaccounted for (`resume_sent_at`)
    /// is never written off by the failure of something else (a listing that failed while
    /// looking for its session), nor answered as a failure: its outcome is as unknown as
    /// before, so the lock is kept and handed over like the holder's own unknown Resume, and
    /// the caller gets 202 (docs/wake-protocol.md, "A wake, step by step"). Without one, this
    /// is a failed wake like any other.
    pub(super) async fn interrupted(
        &self,
        driver: &Driver<'_, S>,
        mut held: Held,
        err: Error,
    ) -> Result<WakeOutcome, Error> {
        if held.record.resume_sent_at_ms.is_none() {
            return Err(self.fail(driver, &mut held, err, None).await);
        }
        tracing::warn!(agent = %held.key, error = %err, "reconcile failed; an earlier Resume is still unaccounted for, handing polling over");
        Box::pin(self.hand_over(driver, held)).await
    }
}

/// The metadata of the snapshot a Resume was sent for (to recognise its session later).
pub(super) fn snapshot_metadata(
    listing: &[Snapshot],
    snapshot_id: Option<&str>,
) -> Vec<MetadataEntry> {
    listing
        .iter()
        .find(|s| s.snapshot_id.as_deref() == snapshot_id && snapshot_id.is_some())
        .map(|s| s.session_metadata.clone())
        .unwrap_or_default()
}
