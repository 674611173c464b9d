//! The fan-out of due occurrences (docs/schedules.md, "Fan-out"): the tick finds what is due
//! and hands each occurrence, as a [`DueOccurrence`] message, to a queue whose consumers act
//! on it, so a minute of ten thousand wakes is worked by many invocations at once, each bounded
//! by the deployment's AgentKit budget, instead of inside the tick's one.
//!
//! - deployed: a standard SQS queue ([`sqs`]), consumed by the resume function through an
//!   event source mapping whose maximum concurrency bounds the parallelism;
//! - `serve`, the tests, the benches, the one-shot CLI and a function deployed without a queue:
//!   the same messages through a channel into the same consumer ([`channel`]): a follow-up
//!   delayed, so many worked at once, nothing delivered twice (the next tick sends again what
//!   was not finished). Where nothing else consumes the channel, the tick's own invocation does.
//!
//! Delivery is at least once, in no particular order. What makes an occurrence fire once is
//! not the queue but the schedule item: whoever acts records the decision on it with a
//! conditional write first, so a repeated message finds the occurrence started, reached or
//! moved on. Which is also why the queue is a standard one, not FIFO: the one thing FIFO adds
//! over it, a message delayed on its own, a standard queue has and FIFO has not. The consumer
//! of an occurrence still in flight (a wake sent, a sleep's snapshot being made, a throttled
//! Resume) follows it up: it sends the occurrence again, delayed by when it is worth looking
//! again, so the agent's record is settled within seconds of AgentKit being done, not at the
//! next minute's tick.

pub mod channel;
mod message;
pub mod sqs;

pub use channel::{ChannelCounts, DueChannel, AT_ONCE};
pub use message::{DueOccurrence, FanoutError};
pub use sqs::SqsQueue;

/// Where the tick hands due occurrences.
pub enum Fanout {
    /// A channel in this process ([`channel`]).
    Channel(DueChannel),
    /// A standard SQS queue ([`sqs`]).
    Sqs(SqsQueue),
}

impl Fanout {
    /// Hand `due` over.
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
