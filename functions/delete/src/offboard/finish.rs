//! Finishing offboardings a run could not: every sweep takes each pending owner and lists and
//! deletes again ([`Offboard::list_and_delete`]): what the progress says is left, and whatever
//! a listing finds now, when the last complete one began too early to be the last (an agent a
//! request admitted just before the offboarding wrote afterwards) or failed. An offboarding
//! with nothing left after a listing late enough is finished and leaves the pending list.

use snapwake::agentkit::AgentKit;
use snapwake::ambient::now_ms;
use snapwake::error::Error;
use snapwake::invocation::Deadline;
use snapwake::offboarding;
use snapwake::store::{AgentStore, ScheduleStore};

use super::{FinishReport, Offboard, OffboardReport};

impl<S: AgentStore + ScheduleStore, K: AgentKit> Offboard<'_, S, K> {
    /// Delete what the pending offboardings left, within `deadline`.
    pub async fn finish_pending(&self, deadline: Deadline) -> Result<FinishReport, Error> {
        let mut report = FinishReport::default();
        for owner in offboarding::pending(self.store).await? {
            report.owners += 1;
            let Some(mut progress) = offboarding::progress(self.store, &owner).await? else {
                continue;
            };
            if deadline.is_past() {
                report.left += progress.left.len();
                continue;
            }
            progress.runs += 1;
            let mut run = OffboardReport::default();
            if let Err(e) = self
                .list_and_delete(&mut progress, &mut run, deadline)
                .await
            {
                tracing::warn!(owner = %owner, error = %e, "offboarding: cannot list the owner's agents yet");
                report.unlisted += 1;
            }
            report.deleted += run.deleted;
            report.left += progress.left.len();
            if progress.finish_if_done(now_ms()) {
                report.finished += 1;
            }
            offboarding::record(self.store, &progress).await?;
            tracing::info!(
                owner = %owner,
                left = progress.left.len(),
                finished = progress.is_finished(),
                "offboarding: finishing"
            );
        }
        Ok(report)
    }
}
