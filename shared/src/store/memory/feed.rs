//! The memory store's change feed: what DynamoDB Streams is to the table. Each write to an
//! agent record, its record before and after, numbered in the order made; the last
//! [`FEED_KEEP`] are kept (a stream keeps 24 hours), so a reader that falls further behind
//! misses changes, as one that reads a stream too late does.

use std::collections::VecDeque;

use super::MemoryStore;
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
    pub(super) fn push(&mut self, old: Option<AgentRecord>, new: &AgentRecord) {
        self.last += 1;
        self.changes.push_back((self.last, old, new.clone()));
        while self.changes.len() > FEED_KEEP {
            self.changes.pop_front();
        }
    }
}

impl MemoryStore {
    /// The number of the last change made (0: none yet): where the feed stands.
    pub fn changes_made(&self) -> u64 {
        self.lock().feed.last
    }

    /// Up to `limit` changes made after the one numbered `after` (0: from the oldest kept),
    /// oldest first; each change's `sequence` is its number.
    pub fn changes_after(&self, after: u64, limit: usize) -> Vec<RecordChange> {
        let tables = self.lock();
        let changes = &tables.feed.changes;
        // Numbers are consecutive: the first wanted is found by subtraction.
        let first = changes.front().map_or(1, |(n, _, _)| *n);
        let skip = usize::try_from((after + 1).saturating_sub(first)).unwrap_or(usize::MAX);
        changes
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
}

/// A reader of a memory store's feed from where it was opened.
pub struct FeedReader {
    store: std::sync::Arc<MemoryStore>,
    after: u64,
}

impl FeedReader {
    /// Reads the changes `store` makes from now on.
    pub fn new(store: std::sync::Arc<MemoryStore>) -> Self {
        let after = store.lock().feed.last;
        FeedReader { store, after }
    }
}

impl crate::store::ChangeSource for FeedReader {
    async fn next(&mut self) -> Result<Vec<RecordChange>, String> {
        let changes = self.store.changes_after(self.after, 1000);
        if let Some(last) = changes.last() {
            self.after = last.sequence.parse().unwrap_or(self.after);
        }
        Ok(changes)
    }
}
