//! State-change events (docs/events.md): the port a publisher implements ([`EventSink`]), the
//! store decorator that publishes one event per state-changing write ([`Announcing`]), and the
//! adapters: EventBridge ([`eventbridge`]), none, and (feature `memory`) a recording one for
//! local runs and tests ([`recorded`]).
//!
//! Why a store decorator: every state change of an agent is one conditional write that the
//! code making it marks with what it means (`Changes::announce`): the wake's completion, a
//! failure's record, a sleep's end, a create, a delete's tombstone. Only the writer whose
//! write lands publishes, so a storm of 500 callers that ends in one completion publishes one
//! event, and the event's `change_id` is that write's version.
//!
//! What set the change off (`trigger`) is the invocation's: HTTP unless an entry point says
//! otherwise with [`with_trigger`] (the tick, the sweep, an offboarding).

mod announcing;
pub mod eventbridge;
#[cfg(feature = "memory")]
pub mod recorded;

use std::future::Future;

use crate::domain::{StateEvent, Trigger};

pub use announcing::{event_of, Announcing};

tokio::task_local! {
    static TRIGGER: Trigger;
}

/// Run `work` with `trigger` as what sets off the changes it makes.
pub async fn with_trigger<F: Future>(trigger: Trigger, work: F) -> F::Output {
    TRIGGER.scope(trigger, work).await
}

/// The trigger of the current task (HTTP unless [`with_trigger`] said otherwise).
pub fn current_trigger() -> Trigger {
    TRIGGER.try_with(|t| *t).unwrap_or_default()
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum EventError {
    /// The bus could not be reached, refused the call, or failed the entry; worth retrying.
    #[error("publishing failed: {0}")]
    Failed(String),
    /// No credentials to sign with.
    #[error("no AWS credentials to publish with: {0}")]
    Credentials(String),
}

/// Where state-change events go.
pub trait EventSink: Send + Sync {
    fn publish(&self, event: &StateEvent) -> impl Future<Output = Result<(), EventError>> + Send;

    /// Whether events go anywhere (a deployment without a bus builds none and counts none).
    fn enabled(&self) -> bool {
        true
    }
}

/// A shared sink is a sink.
impl<T: EventSink> EventSink for std::sync::Arc<T> {
    fn publish(&self, event: &StateEvent) -> impl Future<Output = Result<(), EventError>> + Send {
        (**self).publish(event)
    }

    fn enabled(&self) -> bool {
        (**self).enabled()
    }
}

/// The publisher of a deployment: EventBridge when `SNAPWAKE_EVENT_BUS` names a bus, else
/// nothing.
pub enum Publisher {
    Off,
    EventBridge(eventbridge::EventBridge),
}

impl EventSink for Publisher {
    async fn publish(&self, event: &StateEvent) -> Result<(), EventError> {
        match self {
            Publisher::Off => Ok(()),
            Publisher::EventBridge(bus) => bus.publish(event).await,
        }
    }

    fn enabled(&self) -> bool {
        !matches!(self, Publisher::Off)
    }
}
