//! What a sweep remembers between runs and reports: the `SWEEP` / `CURSOR` checkpoint of an
//! unfinished pass (with the deletions a run's deadline cut off), the sweep's own lock, and
//! the counts.

use serde::{Deserialize, Serialize};
use snapwake::domain::AgentKey;
use snapwake::error::Error;
use snapwake::store::{AgentStore, DocumentKey, ScheduleStore, StoreError};

/// Where an interrupted sweep picks up.
pub const CHECKPOINT: DocumentKey<'static> = DocumentKey {
    pk: "SWEEP",
    sk: "CURSOR",
};

/// When the last pass that completed began and ended: a scheduled run starts a new pass only
/// a pass's interval after the last one began (docs/operations.md, *At a million snapshots*).
pub const LAST_PASS: DocumentKey<'static> = DocumentKey {
    pk: "SWEEP",
    sk: "LAST",
};

/// A scheduled run within this much of the interval counts as on time: EventBridge fires a
/// little early or late, and a pass begun at 10:00:01 is due again at the 11:00 run.
const SCHEDULE_SLACK_MS: u64 = 120_000;

/// One sweep at a time.
pub const SWEEP_LOCK: DocumentKey<'static> = DocumentKey {
    pk: "LOCK#sweep",
    sk: "LOCK",
};

/// What a sweep counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepCounts {
    /// Agents seen on the Tools.
    pub seen: u64,
    /// Records created or brought up to date.
    pub indexed: u64,
    /// Snapshots deleted (a dry run: that would be).
    pub pruned: u64,
    /// Agents with snapshots to prune whose lock was held: left for the next round.
    pub skipped: u64,
    /// Idle agents deleted as a whole (`SNAPWAKE_AGENT_MAX_IDLE_DAYS`).
    #[serde(default)]
    pub idle_deleted: u64,
    /// Tools that could not be listed, records that could not be written, deletions that
    /// failed.
    pub errors: u64,
}

impl SweepCounts {
    pub(super) fn add(&mut self, other: &SweepCounts) {
        self.seen += other.seen;
        self.indexed += other.indexed;
        self.pruned += other.pruned;
        self.skipped += other.skipped;
        self.idle_deleted += other.idle_deleted;
        self.errors += other.errors;
    }
}

/// What one run of the sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// This run's counts.
    #[serde(flatten)]
    pub counts: SweepCounts,
    /// The whole pass, across the runs it took.
    pub pass: SweepCounts,
    /// The pass finished in this run (else a checkpoint says where the next run goes on).
    pub completed: bool,
    /// This run continued a pass an earlier run had checkpointed.
    pub resumed: bool,
    /// Another sweep held the lock: this run did nothing.
    pub already_running: bool,
    pub dry_run: bool,
    /// The Tools the pass covers.
    pub tools: usize,
    pub duration_ms: u64,
}

/// The `SWEEP` / `CURSOR` document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Checkpoint {
    pub(super) started_at_ms: u64,
    /// Tools finished in this pass.
    pub(super) done: Vec<String>,
    /// The Tool being swept when the last run stopped, and the last agent it finished there.
    pub(super) tool: Option<String>,
    pub(super) after: Option<AgentKey>,
    /// Every Tool listed to its end and every record written so far in this pass.
    pub(super) index_complete: bool,
    pub(super) totals: SweepCounts,
    /// Deletions on `tool` the last run started but whose answer its deadline cut off:
    /// AgentKit may have carried them out. The next run sends each one again
    /// (docs/operations.md, "Time").
    #[serde(default)]
    pub(super) unconfirmed: Vec<Unconfirmed>,
}

/// The [`LAST_PASS`] document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct LastPass {
    pub(super) started_at_ms: u64,
    pub(super) completed_at_ms: u64,
}

/// A deletion whose answer a run's deadline cut off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Unconfirmed {
    pub(super) agent: AgentKey,
    pub(super) snapshot_id: String,
}

/// The checkpoint of an unfinished pass, and the document's version.
pub(super) async fn load<S: AgentStore + ScheduleStore>(
    store: &S,
) -> Result<(Option<Checkpoint>, u64), Error> {
    let Some(doc) = store.get_document(CHECKPOINT).await? else {
        return Ok((None, 0));
    };
    let cp = serde_json::from_value::<Option<Checkpoint>>(doc.value).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "sweep: unreadable checkpoint; starting a new pass");
        None
    });
    Ok((cp, doc.version))
}

/// Write the checkpoint (`None`: the pass is over). Only the holder of the sweep lock writes
/// it, so a conflict means the document changed under an expired lock: the next pass sorts
/// it out.
pub(super) async fn save<S: AgentStore + ScheduleStore>(
    store: &S,
    cp: Option<&Checkpoint>,
    version: u64,
) -> Result<(), Error> {
    let value = serde_json::to_value(cp).map_err(|e| Error::Internal(e.to_string()))?;
    match store.put_document(CHECKPOINT, &value, version, None).await {
        Ok(_) => Ok(()),
        Err(StoreError::DocumentConflict { .. }) => {
            tracing::warn!("sweep: the checkpoint changed under this run; leaving it");
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Record the pass that just completed. A failure is logged: at worst the next scheduled run
/// starts a pass early.
pub(super) async fn save_last<S: AgentStore + ScheduleStore>(store: &S, last: &LastPass) {
    let written = async {
        let value = serde_json::to_value(last).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let version = store
            .get_document(LAST_PASS)
            .await?
            .map_or(0, |d| d.version);
        store.put_document(LAST_PASS, &value, version, None).await
    };
    if let Err(e) = written.await {
        tracing::warn!(error = %e, "sweep: cannot record the pass that completed");
    }
}

/// Whether a scheduled run has work at `now_ms`: a pass in progress to continue, or no pass
/// begun within `every` (less the schedule's slack).
pub(super) async fn due<S: AgentStore + ScheduleStore>(
    store: &S,
    every: std::time::Duration,
    now_ms: u64,
) -> Result<bool, Error> {
    if load(store).await?.0.is_some() {
        return Ok(true);
    }
    let last = store
        .get_document(LAST_PASS)
        .await?
        .and_then(|d| serde_json::from_value::<LastPass>(d.value).ok());
    let every_ms = every.as_millis() as u64;
    Ok(last.is_none_or(|l| now_ms + SCHEDULE_SLACK_MS >= l.started_at_ms.saturating_add(every_ms)))
}
