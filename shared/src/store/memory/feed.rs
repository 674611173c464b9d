//! The memory store's change feed: what DynamoDB Streams is to the table. Each write to an
//! agent record, its record before and after, numbered in the order made; the last
//! [`FEED_KEEP`] are kept (a stream keeps 24 hours), so a reader that falls further behind
//! misses changes, as one that reads a stream too late does.

use std::collections::VecDeque;

use crate::domain::AgentRecord;
use crate::store::RecordChange;

/// Changes kept.
pub const FEED_KEEP: usize = 100_000;

#[derive(Default)]
pub(super) struct Feed {
    changes: VecDeque<(u64, Option<AgentRecord>, AgentRecord)>,
    /// The number the next change gets (the first is 1).
    last: u64,
}

impl Feed {
    /// The number of the last change made (0: none yet).
    pub(super) fn last(&self) -> u64 {
        self.last
    }

    /// Up to `limit` changes made after the one numbered `after` (0: from the oldest kept),
    /// oldest first; each change's `sequence` is its number.
    pub(super) fn after(&self, after: u64, limit: usize) -> Vec<RecordChange> {
        // Numbers are consecutive: the first wanted is found by subtraction.
        let first = self.changes.front().map_or(1, |(n, _, _)| *n);
        let skip = usize::try_from((after + 1).saturating_sub(first)).unwrap_or(usize::MAX);
        self.changes
            .iter()
            .skip(skip)
            .take(limit)
            .map(|(n, old, new)| RecordChange {
                sequence: n.to_string(),
                old: old.clone(),
                new: Some(new.clone()),
            })
            .collect()
    }

    pub(super) fn push(&mut self, old: Option<AgentRecord>, new: &AgentRecord) {
        self.last += 1;
        self.changes.push_back((self.last, old, new.clone()));
        while self.changes.len() > FEED_KEEP {
            self.changes.pop_front();
        }
    }
}
