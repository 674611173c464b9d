//! The memory store's change feed, what DynamoDB Streams is to the table: each agent record
//! write, before and after, numbered in order. Only the last [`FEED_KEEP`] are kept (a stream
//! keeps 24 hours), so a reader too far behind misses changes, as with a stream.

use std::collections::VecDeque;

use crate::domain::AgentRecord;
use crate::store::RecordChange;

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

    /// Up to `limit` changes after number `after` (0: the oldest kept); `sequence` is the number.
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
