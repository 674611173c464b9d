//! The minute refresh (docs/operations.md, "Index freshness"): between hourly sweeps, each
//! snapshot Tool is read only for what is new, and what is new is indexed, so a snapshot made
//! outside snapwake is in its owner's list within two minutes.
//!
//! AgentKit's listing has no documented order and no sort, but it filters on creation time
//! (`CreateTimeAfter`, in the SDK's models). So each Tool is read from a mark (`SWEEP` /
//! `REFRESH`): [`OVERLAP`] before the last read began, and never after the oldest snapshot
//! still being made (its status must be seen to move on). The overlap covers snapshots AgentKit
//! lists some time after their `CreatedAt` (an expiry snapshot may be missing from listings for
//! a while) and a clock a little apart from AgentKit's. A quiet minute is one short page per
//! Tool: the snapshots of the last few minutes, which indexing finds unchanged (one read each,
//! no write); after a burst (every session of a team expiring at once) the burst is read again
//! for those few minutes, then no more. A Tool read for the first time is read whole. What a
//! refresh cannot see — a snapshot deleted outside snapwake — the hourly sweep settles.

use std::time::Duration;

use serde::Serialize;
use snapwake::agentkit::types::Snapshot;
use snapwake::agentkit::AgentKit;
use snapwake::ambient::{epoch_ms, format_ms, now_ms};
use snapwake::domain::{Retention, SnapshotPhase, ToolRegistry};
use snapwake::error::Error;
use snapwake::index_sync::{agents_of, freshness, index_many, save_freshness, tools};
use snapwake::index_sync::{snapshots_between, SliceSettings};
use snapwake::index_sync::{ToolListing, ToolMark, Upsert};
use snapwake::invocation::Deadline;
use snapwake::locate::regions;
use snapwake::lock::{DocumentAcquired, DocumentLock, LockSettings};
use snapwake::store::{AgentStore, DocumentKey, ScheduleStore, StoreError};

/// How far before the last read began the next one starts.
pub const OVERLAP: Duration = Duration::from_secs(300);

/// One refresh at a time.
pub const REFRESH_LOCK: DocumentKey<'static> = DocumentKey {
    pk: "LOCK#refresh",
    sk: "LOCK",
};

/// What one refresh did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RefreshReport {
    /// Snapshot Tools read.
    pub tools: usize,
    /// AgentKit calls made.
    pub calls: u64,
    /// Time spent listing, summed over the Tools (the rest of `duration_ms` is the table's:
    /// reading the listed agents' records and writing what is new).
    pub listing_ms: u64,
    /// Snapshots listed (new ones, and the overlap).
    pub listed: u64,
    /// Records created or brought up to date.
    pub indexed: u64,
    /// Tools that could not be read and records that could not be written: their mark stays,
    /// so the next refresh reads the same again.
    pub errors: u64,
    /// Another refresh held the lock: this one did nothing.
    pub already_running: bool,
    pub duration_ms: u64,
}

/// One run of the refresh.
pub struct Refresh<'a, S, K> {
    pub store: &'a S,
    pub agentkit: &'a K,
    pub registry: &'a ToolRegistry,
    /// How a Tool with much that is new (a first read, a burst) is read side by side.
    pub slices: SliceSettings,
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Refresh<'_, S, K> {
    pub async fn run(&self, deadline: Deadline) -> Result<RefreshReport, Error> {
        let started = tokio::time::Instant::now();
        let lock_settings = LockSettings::default();
        let lock = DocumentLock::new(self.store, REFRESH_LOCK, &lock_settings);
        let hold = match lock.acquire(deadline.remaining()).await? {
            DocumentAcquired::Held(h) => h,
            DocumentAcquired::Busy { .. } => {
                return Ok(RefreshReport {
                    already_running: true,
                    ..RefreshReport::default()
                })
            }
        };
        let result = self.pass(deadline).await;
        if let Err(e) = lock.release(hold).await {
            tracing::warn!(error = %e, "refresh: could not release its lock");
        }
        let mut report = result?;
        report.duration_ms = started.elapsed().as_millis() as u64;
        tracing::info!(
            tools = report.tools,
            calls = report.calls,
            listed = report.listed,
            listing_ms = report.listing_ms,
            indexed = report.indexed,
            errors = report.errors,
            "refresh"
        );
        Ok(report)
    }

    async fn pass(&self, deadline: Deadline) -> Result<RefreshReport, Error> {
        let (mut marks, version) = freshness(self.store).await?;
        let mut report = RefreshReport::default();
        for (kind, tool, retention) in tools(self.registry) {
            if retention != Retention::Recoverable || deadline.is_past() {
                continue;
            }
            report.tools += 1;
            let mark = marks.tools.get(&tool).cloned().unwrap_or_default();
            let listed_at_ms = now_ms();
            let listing_started = tokio::time::Instant::now();
            let read = self.read(&tool, &mark, &mut report, deadline).await;
            report.listing_ms += listing_started.elapsed().as_millis() as u64;
            let (region, snapshots) = match read {
                Ok(Some(read)) => read,
                // No region knows the Tool: nothing to index.
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(tool_id = %tool, error = %e, "refresh: cannot read the Tool");
                    report.errors += 1;
                    continue;
                }
            };
            report.listed += snapshots.len() as u64;
            let listing = ToolListing {
                kind,
                tool_id: tool.clone(),
                region,
                retention,
                snapshots,
                sessions: Vec::new(),
                listed_at_ms,
                partial: true,
            };
            let mut complete = true;
            let listing = &listing;
            let agents: Vec<_> = agents_of(listing).into_iter().collect();
            let outcomes = index_many(self.store, listing, &agents, deadline).await;
            for outcome in outcomes {
                match outcome {
                    Upsert::Written => report.indexed += 1,
                    Upsert::Unchanged => {}
                    Upsert::Failed | Upsert::OutOfTime => complete = false,
                }
            }
            if !complete {
                report.errors += 1;
                continue;
            }
            let after = Some(next_after(&listing.snapshots, listed_at_ms));
            marks.tools.insert(
                tool,
                ToolMark {
                    refreshed_at_ms: listed_at_ms,
                    after,
                },
            );
        }
        match save_freshness(self.store, &marks, version).await {
            Ok(()) => {}
            // Another refresh wrote it under an expired lock: the next one reads from it.
            Err(StoreError::DocumentConflict { .. }) => {
                tracing::warn!("refresh: the freshness record changed under this run")
            }
            Err(e) => return Err(e.into()),
        }
        Ok(report)
    }

    /// Every snapshot of `tool` created after the mark, in the first region that knows the
    /// Tool (`None`: none does).
    async fn read(
        &self,
        tool: &str,
        mark: &ToolMark,
        report: &mut RefreshReport,
        deadline: Deadline,
    ) -> Result<Option<(String, Vec<Snapshot>)>, snapwake::agentkit::AgentKitError> {
        let after_s = mark.after.as_deref().and_then(epoch_ms).map(|ms| ms / 1000);
        for region in regions(self.registry, self.agentkit) {
            let read = snapshots_between(
                self.agentkit,
                region,
                tool,
                (after_s, None),
                self.slices,
                deadline,
            )
            .await;
            match read {
                Ok(read) => {
                    report.calls += read.calls;
                    return Ok(Some((region.to_string(), read.snapshots)));
                }
                Err(e) if e.is_not_found() => {
                    report.calls += 1;
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

/// Where the next read of a Tool starts, from the one that began at `listed_at_ms`:
/// [`OVERLAP`] before it, and a second before the oldest snapshot still in progress.
fn next_after(listed: &[Snapshot], listed_at_ms: u64) -> String {
    let dated = |s: &Snapshot| s.created_at.as_deref().and_then(epoch_ms);
    let mut after = listed_at_ms.saturating_sub(OVERLAP.as_millis() as u64);
    let unsettled = listed
        .iter()
        .filter(|s| {
            !matches!(
                SnapshotPhase::of(s.status.as_deref()),
                SnapshotPhase::Ready | SnapshotPhase::Failed
            )
        })
        .filter_map(dated)
        .min();
    if let Some(oldest) = unsettled {
        after = after.min(oldest.saturating_sub(1000));
    }
    format_ms(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(id: &str, status: &str, at: &str) -> Snapshot {
        Snapshot {
            snapshot_id: Some(id.into()),
            status: Some(status.into()),
            created_at: Some(at.into()),
            ..Snapshot::default()
        }
    }

    #[test]
    fn the_next_read_overlaps_and_waits_for_snapshots_in_progress() {
        let at = epoch_ms("2026-12-04T10:00:00Z").unwrap_or_default();
        assert_eq!(next_after(&[], at), "2026-12-04T09:55:00Z");
        let quiet = [snap("a", "Ready", "2026-12-04T08:00:00Z")];
        assert_eq!(next_after(&quiet, at), "2026-12-04T09:55:00Z");
        let making = [
            snap("a", "Ready", "2026-12-04T10:00:00Z"),
            snap("b", "Creating", "2026-12-04T09:00:00Z"),
            snap("c", "Failed", "2026-12-04T08:00:00Z"),
        ];
        assert_eq!(next_after(&making, at), "2026-12-04T08:59:59Z");
    }
}
