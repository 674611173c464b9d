//! The fan-out queue's consumer (docs/schedules.md, "Fan-out"): each message is one due
//! occurrence a tick found, decided and acted on (`handle_due`), as of the tick's time and with
//! the lead the tick worked out.
//!
//! Deployed, the resume function gets the messages in batches from an SQS event source
//! mapping; a batch's messages are worked at once, and those that could not be handled are
//! reported (`batchItemFailures`) for SQS to deliver again, after its visibility timeout, up
//! to the queue's receive count, then to the dead-letter queue. A message delivered twice, or
//! one whose occurrence a later tick's message already moved on, finds the schedule item's
//! conditional write already made and does nothing twice.

use futures::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use snapwake::agentkit::AgentKit;
use snapwake::domain::Trigger;
use snapwake::error::Error;
use snapwake::fanout::DueOccurrence;
use snapwake::invocation::Deadline;
use snapwake::invocation::Invocation;
use snapwake::invocation::{self, Metric};
use snapwake::schedule::Readiness;
use snapwake::store::{AgentStore, ScheduleStore, Within};

use super::handled::{Handled, FOLLOW_UP_LATE_MS};
use crate::Resume;

/// An SQS event source mapping's batch (the fields read of it).
#[derive(Debug, Deserialize)]
#[serde(try_from = "QueueBatchFields")]
pub struct QueueBatch {
    pub records: Vec<QueueMessage>,
}

#[derive(Debug, Deserialize)]
struct QueueBatchFields {
    #[serde(rename = "Records")]
    records: Vec<QueueMessage>,
}

impl TryFrom<QueueBatchFields> for QueueBatch {
    type Error = &'static str;

    fn try_from(batch: QueueBatchFields) -> Result<Self, Self::Error> {
        if batch.records.iter().any(|r| r.event_source != "aws:sqs") {
            return Err("not an SQS batch: a record's eventSource is not aws:sqs");
        }
        Ok(QueueBatch {
            records: batch.records,
        })
    }
}

/// One SQS message of a batch.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueMessage {
    pub message_id: String,
    pub body: String,
    pub event_source: String,
}

/// The answer an event source mapping with `ReportBatchItemFailures` reads.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct BatchResponse {
    #[serde(rename = "batchItemFailures")]
    pub failures: Vec<ItemFailure>,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct ItemFailure {
    #[serde(rename = "itemIdentifier")]
    pub id: String,
}

/// Messages of one batch worked at once; the budget paces what they ask of AgentKit.
const AT_ONCE: usize = 10;
/// How soon an occurrence another consumer was deciding on is looked at again.
const CONTENDED_AGAIN: std::time::Duration = std::time::Duration::from_secs(1);

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// One batch from the queue, until `deadline`: the messages not handled are reported.
    /// A body that is not a due occurrence can never be handled: it is logged and dropped
    /// rather than delivered again until it is dead-lettered.
    pub async fn due_batch(&self, batch: QueueBatch, deadline: Deadline) -> BatchResponse {
        Invocation::background(crate::FUNCTION, Trigger::Schedule)
            .run(self.due_batch_of(batch, deadline))
            .await
    }

    async fn due_batch_of(&self, batch: QueueBatch, deadline: Deadline) -> BatchResponse {
        let worked: Vec<(String, bool)> = stream::iter(batch.records)
            .map(|message| async move {
                let handled = match serde_json::from_str::<DueOccurrence>(&message.body) {
                    Ok(due) => self.due(&due, deadline).await.is_ok(),
                    Err(e) => {
                        tracing::warn!(error = %e, "a queue message that is no due occurrence, dropped");
                        true
                    }
                };
                (message.message_id, handled)
            })
            .buffer_unordered(AT_ONCE)
            .collect()
            .await;
        let failures: Vec<ItemFailure> = worked
            .into_iter()
            .filter(|(_, handled)| !handled)
            .map(|(id, _)| ItemFailure { id })
            .collect();
        invocation::emit(Metric::of("due").count("DueFailed", failures.len() as u64));
        BatchResponse { failures }
    }

    /// Decide and act on one due occurrence as its tick would have, and follow it up while it
    /// is still open: the same occurrence sent again, delayed until it is worth looking again
    /// (a wake sent, not Ready yet; a Resume throttled; another consumer deciding on it at the
    /// same moment). `Err`: not handled (deliver it again).
    pub async fn due(&self, due: &DueOccurrence, deadline: Deadline) -> Result<(), Error> {
        // Nobody waits on it: its AgentKit calls take the budget's background lane.
        Invocation::background(crate::FUNCTION, Trigger::Schedule)
            .run(self.due_at(due, deadline))
            .await
            .map(|_| ())
    }

    pub(super) async fn due_at(
        &self,
        due: &DueOccurrence,
        deadline: Deadline,
    ) -> Result<Handled, Error> {
        if due.idle {
            let handled = self.idle_due(due, deadline).await?;
            self.follow_up(due, &handled).await;
            return Ok(handled);
        }
        let store = Within::new(&self.store, deadline);
        let registry = self.registry.get(&store).await?;
        let Some(schedule) = store.get_schedule(&due.agent).await? else {
            // Deleted since the tick: nothing is due.
            return Ok(Handled::Idle);
        };
        // Superseded: the occurrence is in flight and whoever wrote that follows it up (a
        // message of its own, delayed until then). This copy — the tick's, sent again while the
        // first waited in the queue, or one that lost a race — would only contend with it.
        // A follow-up lost with its consumer is late by then, and not dropped (the tick's rule).
        let pending = schedule.open.as_ref().and_then(|o| o.follow_up_ms);
        if pending.is_some_and(|at| due.tick_ms != at && due.tick_ms < at + FOLLOW_UP_LATE_MS) {
            tracing::debug!(agent = %due.agent, "a due occurrence its follow-up supersedes");
            return Ok(Handled::Idle);
        }
        let handled = self
            // One occurrence: it may wait the whole invocation for its budget slots.
            .handle_due(store, schedule, due.tick_ms, due.lead, &registry)
            .await
            .inspect_err(|e| tracing::warn!(agent = %due.agent, error = %e, "a due occurrence could not be handled"))?;
        if let Handled::Settled {
            ready: Some((kind, ms)),
        }
        | Handled::Carried {
            ready: Some((kind, ms)),
            ..
        } = handled
        {
            if let Err(e) = Readiness::record(&store, kind, &[ms]).await {
                tracing::info!(error = %e, %kind, "a readiness seen was not kept");
            }
        }
        self.follow_up(due, &handled).await;
        Ok(handled)
    }

    /// Send `due` again, delayed until it is worth looking at again, if `handled` says so.
    async fn follow_up(&self, due: &DueOccurrence, handled: &Handled) {
        let follow_up = match handled {
            Handled::Acted { follow_up, .. } | Handled::Carried { follow_up, .. } => *follow_up,
            // Another consumer (or a person's PUT) was writing the item: decide again soon,
            // from what it left (its own follow-up, if any, finds the occurrence moved on).
            Handled::Contended => Some(CONTENDED_AGAIN),
            _ => None,
        };
        if let Some(wait) = follow_up {
            let again = due.follow_up(wait);
            // Lost, the occurrence is not: the tick sends it again once its follow-up is late.
            if let Err(e) = self.fanout.send(std::slice::from_ref(&again)).await {
                tracing::warn!(agent = %due.agent, error = %e, "a follow-up was not sent; the tick sends the occurrence again");
            }
        }
    }
}
