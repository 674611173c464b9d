//! Events kept in memory (feature `memory`), for `snapwake serve` (`GET /v1/events`) and tests.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::sink::{EventError, EventSink};
use crate::domain::StateEvent;

/// The last `keep` events published, oldest first.
pub struct Recorded {
    events: Mutex<VecDeque<StateEvent>>,
    keep: usize,
    /// Print each to the log (serve).
    log: bool,
}

impl Recorded {
    pub fn new(keep: usize, log: bool) -> Self {
        Recorded {
            events: Mutex::new(VecDeque::new()),
            keep: keep.max(1),
            log,
        }
    }

    pub fn events(&self) -> Vec<StateEvent> {
        self.lock().iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<StateEvent>> {
        // Pushes are single assignments: a poisoned lock is still consistent.
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EventSink for Recorded {
    async fn publish(&self, event: &StateEvent) -> Result<(), EventError> {
        if self.log {
            tracing::info!(
                detail_type = %event.detail_type,
                agent = %format!("{}/{}", event.detail.kind, event.detail.agent_id),
                trigger = ?event.detail.trigger,
                change_id = %event.detail.change_id,
                "state-change event"
            );
        }
        let mut events = self.lock();
        events.push_back(event.clone());
        while events.len() > self.keep {
            events.pop_front();
        }
        Ok(())
    }
}
