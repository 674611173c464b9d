//! The table's change stream as the port sees it: every write to an agent record, with the
//! record before and after it. DynamoDB Streams delivers it (`NEW_AND_OLD_IMAGES`; the
//! deployed consumer's event source mapping, `snapwake serve`'s reader on DynamoDB Local); the
//! memory adapter keeps an equivalent feed. The state-change events are derived from it alone
//! (`crate::events::derive`, docs/events.md), so a function that dies after its write still has
//! its change announced.

use std::future::Future;

use crate::domain::AgentRecord;

/// One write to an agent record, as the stream carries it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordChange {
    /// Its place in the stream (DynamoDB's `SequenceNumber`, the feed's count): what a consumer
    /// names as the first change it could not handle, so delivery resumes there.
    pub sequence: String,
    /// The record before the write (`None`: there was no item).
    pub old: Option<AgentRecord>,
    /// The record after it (`None`: the item was removed, as TTL removes a tombstone).
    pub new: Option<AgentRecord>,
}

/// A reader of the stream, for a local run: the memory store's feed, DynamoDB Local's stream.
/// (Deployed, Lambda's event source mapping reads the stream and hands batches over.)
pub trait ChangeSource: Send {
    /// The changes after those already handed out, oldest first (empty: none yet).
    fn next(&mut self) -> impl Future<Output = Result<Vec<RecordChange>, String>> + Send;
}
