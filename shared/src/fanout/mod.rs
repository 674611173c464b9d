//! The fan-out of due occurrences (docs/schedules.md, "Fan-out"): the tick finds what is due
//! and hands each occurrence, as a [`DueOccurrence`] message, to a queue whose consumers act
//! on it, so a minute of ten thousand wakes is worked by many invocations at once, each bounded
//! by the deployment's AgentKit budget, instead of inside the tick's one.
//!
//! - deployed: an SQS FIFO queue ([`sqs`]), consumed by the resume function through an event
//!   source mapping whose maximum concurrency bounds the parallelism;
//! - `serve`, the tests and the benches: the same messages through a queue in process
//!   ([`local`]), with SQS's FIFO semantics (per-agent order, deduplication, redelivery of a
//!   message not acknowledged, a dead-letter count);
//! - [`Fanout::Inline`]: no queue; the tick acts on each occurrence itself (a deployment with
//!   no queue configured, the one-shot CLI).
//!
//! Delivery is at least once. What makes an occurrence fire once is not the queue but the
//! schedule item: whoever acts records the decision on it with a conditional write first, so a
//! repeated message finds the occurrence started, reached or moved on. The deduplication id
//! ([`DueOccurrence::dedup_id`]) only spares the work. It names the schedule item's version:
//! while a message waits or is being worked, every tick reads the same version and sends the
//! same id (dropped); once the consumer has recorded what it did (a wake sent, not yet Ready),
//! the next tick sends a new one, to carry it on.

pub mod local;
pub mod sqs;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::{AgentKey, ScheduleRecord};
use crate::schedule::{DueLead, Starting};

pub use local::{LocalQueue, QueueSettings, QueueStats};
pub use sqs::SqsQueue;

/// One due occurrence of one schedule, as a tick found it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DueOccurrence {
    pub agent: AgentKey,
    /// The tick's time (epoch ms): the consumer decides as of it, as the tick would have.
    pub tick_ms: u64,
    /// The schedule's next occurrences when the tick read it: which occurrence this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep_ms: Option<u64>,
    /// The schedule item's version the tick read.
    pub version: u64,
    /// How early its wake starts.
    pub lead: DueLead,
}

impl DueOccurrence {
    /// The message for `record` (which has a key) due at the tick of `tick_ms`.
    pub fn of(record: &ScheduleRecord, tick_ms: u64, lead: DueLead) -> Option<DueOccurrence> {
        Some(DueOccurrence {
            agent: record.key.clone()?,
            tick_ms,
            wake_ms: record.next_wake_ms,
            sleep_ms: record.next_sleep_ms,
            version: record.version,
            lead,
        })
    }

    /// The FIFO message group: one per agent, so one agent's occurrences are worked one at a
    /// time and in order, and different agents' in parallel. A digest, since a group id is at
    /// most 128 characters and an agent id is not bounded so.
    pub fn group_id(&self) -> String {
        digest(&[
            self.agent.kind.as_str().as_bytes(),
            self.agent.agent_id.as_bytes(),
        ])
    }

    /// The deduplication id: the agent, the occurrence and the schedule item's version. A
    /// tick delivered twice, or ticks while the message waits, send the same; a tick after the
    /// consumer wrote what it did carries on with a new one.
    pub fn dedup_id(&self) -> String {
        let n = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        digest(&[
            self.agent.kind.as_str().as_bytes(),
            self.agent.agent_id.as_bytes(),
            n(self.wake_ms).as_bytes(),
            n(self.sleep_ms).as_bytes(),
            self.version.to_string().as_bytes(),
        ])
    }
}

fn digest(parts: &[&[u8]]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    hex::encode(hash.finalize())
}

/// Why occurrences were not handed over. The tick fails, and the next one sends them again.
#[derive(Debug, thiserror::Error)]
pub enum FanoutError {
    #[error("the due-occurrence queue refused {refused} of {sent} messages: {reason}")]
    Refused {
        refused: usize,
        sent: usize,
        reason: String,
    },
    #[error("the due-occurrence queue could not be reached: {0}")]
    Unreachable(String),
}

/// Where the tick hands due occurrences.
pub enum Fanout {
    /// Nowhere: the tick acts on them itself.
    Inline,
    /// A queue in this process ([`local`]).
    Local(LocalQueue),
    /// An SQS FIFO queue ([`sqs`]).
    Sqs(SqsQueue),
}

impl Fanout {
    /// Who starts the wakes: the tick, or the queue's consumers.
    pub fn starting(&self) -> Starting {
        match self {
            Fanout::Inline => Starting::ByTick,
            Fanout::Local(_) | Fanout::Sqs(_) => Starting::Queued,
        }
    }

    /// Hand `due` over; `Inline` takes nothing (the tick acts itself).
    pub async fn send(&self, due: &[DueOccurrence]) -> Result<(), FanoutError> {
        match self {
            Fanout::Inline => Ok(()),
            Fanout::Local(queue) => {
                queue.send(due);
                Ok(())
            }
            Fanout::Sqs(queue) => queue.send(due).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Kind;

    fn due(agent: &str, version: u64, wake_ms: Option<u64>) -> DueOccurrence {
        DueOccurrence {
            agent: AgentKey::new(Kind::Codex, agent),
            tick_ms: 60_000,
            wake_ms,
            sleep_ms: None,
            version,
            lead: DueLead::default(),
        }
    }

    #[test]
    fn one_group_per_agent_and_one_id_per_occurrence_and_version() {
        let a = due("a", 7, Some(1));
        assert_eq!(a.group_id(), due("a", 8, Some(2)).group_id());
        assert_ne!(a.group_id(), due("b", 7, Some(1)).group_id());
        assert_eq!(a.group_id().len(), 64, "within SQS's 128 characters");
        // The same item read by a later tick (the message still waiting): the same id.
        let later = DueOccurrence {
            tick_ms: 120_000,
            ..a.clone()
        };
        assert_eq!(a.dedup_id(), later.dedup_id());
        // The item moved on by its consumer, or another occurrence: another.
        assert_ne!(a.dedup_id(), due("a", 8, Some(1)).dedup_id());
        assert_ne!(a.dedup_id(), due("a", 7, Some(2)).dedup_id());
        // Parts are length-prefixed: "ab"+"c" is not "a"+"bc".
        assert_ne!(digest(&[b"ab", b"c"]), digest(&[b"a", b"bc"]));
    }

    #[test]
    fn a_message_reads_back_as_written() {
        let a = due("a", 60_000, Some(1));
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<DueOccurrence>(&text).unwrap(), a);
    }
}
