//! The table's change stream as the port sees it: every write to an agent record, before and
//! after. The state-change events are derived from it alone (docs/events.md), so a function that
//! dies after its write still has its change announced.

use std::future::Future;

use crate::domain::AgentRecord;

/// One write to an agent record, as the stream carries it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordChange {
    /// Its place in the stream: where delivery resumes after a change a consumer could not handle.
    pub sequence: String,
    /// The record before the write (`None`: there was no item).
    pub old: Option<AgentRecord>,
    /// The record after it (`None`: the item was removed, as TTL removes a tombstone).
    pub new: Option<AgentRecord>,
}

/// A reader of the stream for a local run (deployed, Lambda's event source mapping reads it).
pub trait ChangeSource: Send {
    /// The changes after those already handed out, oldest first (empty: none yet).
    fn next(&mut self) -> impl Future<Output = Result<Vec<RecordChange>, String>> + Send;
}
