//! The port a state-change publisher implements ([`EventSink`]), and its error.

use std::future::Future;

use crate::domain::StateEvent;

#[derive(Debug, Clone, thiserror::Error)]
pub enum EventError {
    /// The bus could not be reached, refused the call, or failed the entry; worth retrying.
    #[error("publishing failed: {0}")]
    Failed(String),
    #[error("no AWS credentials to publish with: {0}")]
    Credentials(String),
}

pub trait EventSink: Send + Sync {
    fn publish(&self, event: &StateEvent) -> impl Future<Output = Result<(), EventError>> + Send;

    /// Publish `events` (at most [`super::relay::EVENTS_PER_CALL`]) at once, each one's outcome in
    /// their order: one call where the bus takes several (EventBridge), else one by one.
    fn publish_all(
        &self,
        events: &[StateEvent],
    ) -> impl Future<Output = Vec<Result<(), EventError>>> + Send {
        async move {
            let mut out = Vec::with_capacity(events.len());
            for event in events {
                out.push(self.publish(event).await);
            }
            out
        }
    }

    /// Whether events go anywhere (a deployment without a bus builds none and counts none).
    fn enabled(&self) -> bool {
        true
    }
}

impl<T: EventSink> EventSink for std::sync::Arc<T> {
    fn publish(&self, event: &StateEvent) -> impl Future<Output = Result<(), EventError>> + Send {
        (**self).publish(event)
    }

    fn publish_all(
        &self,
        events: &[StateEvent],
    ) -> impl Future<Output = Vec<Result<(), EventError>>> + Send {
        (**self).publish_all(events)
    }

    fn enabled(&self) -> bool {
        (**self).enabled()
    }
}
