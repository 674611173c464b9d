//! Finishing offboardings a run could not: every sweep takes each pending owner's recorded
//! `left` agents and deletes them (an agent still held stays left for the next sweep). An
//! offboarding with nothing left is finished and leaves the pending list.

use serde::Serialize;
use snapwake::agentkit::AgentKit;
use snapwake::deadline::Deadline;
use snapwake::domain::WakeState;
use snapwake::error::Error;
use snapwake::offboarding;
use snapwake::store::{AgentStore, ScheduleStore};
use snapwake::timestamp::now_ms;

use super::{Found, Offboard, Outcome};

/// What finishing the pending offboardings did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FinishReport {
    /// Owners whose offboarding was pending.
    pub owners: usize,
    /// Agents deleted now.
    pub deleted: usize,
    /// Agents still left (held again, or failed).
    pub left: usize,
    /// Offboardings finished now.
    pub finished: usize,
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Offboard<'_, S, K> {
    /// Delete what the pending offboardings left, within `deadline`.
    pub async fn finish_pending(&self, deadline: Deadline) -> Result<FinishReport, Error> {
        let mut report = FinishReport::default();
        for owner in offboarding::pending(self.store).await? {
            report.owners += 1;
            let Some(mut progress) = offboarding::progress(self.store, &owner).await? else {
                continue;
            };
            let mut left = Vec::new();
            for key in std::mem::take(&mut progress.left) {
                if deadline.is_past() {
                    left.push(key);
                    continue;
                }
                let record = self.store.get(&key).await?;
                if record.as_ref().is_some_and(|r| r.state == WakeState::Gone) {
                    continue;
                }
                let found = Found { record, home: None };
                match self.delete(&key, found, deadline).await {
                    Outcome::Deleted => report.deleted += 1,
                    Outcome::AlreadyGone | Outcome::WouldDelete => {}
                    Outcome::Failed => left.push(key),
                }
            }
            report.left += left.len();
            progress.left = left;
            progress.runs += 1;
            if progress.left.is_empty() {
                progress.finished_at_ms = Some(now_ms());
                report.finished += 1;
            }
            offboarding::record(self.store, &progress).await?;
            tracing::info!(owner = %owner, left = progress.left.len(), "offboarding: finishing");
        }
        Ok(report)
    }
}
