//! The fan-out of due occurrences (docs/schedules.md, "Fan-out"): the tick hands each one, as a
//! [`DueOccurrence`], to a queue whose consumers act on it, many invocations at once.
//!
//! - deployed: a standard SQS queue ([`sqs`]);
//! - `serve`, tests, benches, the CLI, a function without a queue: a channel ([`channel`]).
//!
//! Delivery is at least once: what fires an occurrence once is the schedule item's conditional
//! write, not the queue. Standard, not FIFO: FIFO cannot delay one message on its own.

pub mod channel;
mod message;
pub mod sqs;

pub use channel::{ChannelCounts, DueChannel, AT_ONCE};
pub use message::{in_line, DueOccurrence, FanoutError};
pub use sqs::SqsQueue;

/// Where the tick hands due occurrences.
pub enum Fanout {
    Channel(DueChannel),
    Sqs(SqsQueue),
}

impl Fanout {
    pub async fn send(&self, due: &[DueOccurrence]) -> Result<(), FanoutError> {
        match self {
            Fanout::Channel(channel) => {
                channel.send(due);
                Ok(())
            }
            Fanout::Sqs(queue) => queue.send(due).await,
        }
    }
}
