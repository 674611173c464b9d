//! State-change events (docs/events.md): what a write records of its change (`crate::invocation::announcement`),
//! the event derived from the table's stream (`derive`), relaying them in order ([`relay`]),
//! and the [`EventSink`] port with its adapters (EventBridge, none, recorded in memory). From the
//! stream, because a state change is one conditional write carrying its meaning
//! (`Changes::announce`): the stream delivers every landed write at least once, whatever becomes
//! of its writer, and the request path never waits on the bus.

mod derive;
pub mod eventbridge;
#[cfg(feature = "memory")]
pub mod recorded;
pub mod relay;
mod sink;

use crate::domain::StateEvent;

pub use derive::{derive, event_of};
pub use relay::{announce, consume, follow, Relayed};
pub use sink::{EventError, EventSink};

/// The deployment's publisher: EventBridge when `SNAPWAKE_EVENT_BUS` names a bus, else none.
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

    async fn publish_all(&self, events: &[StateEvent]) -> Vec<Result<(), EventError>> {
        match self {
            Publisher::Off => events.iter().map(|_| Ok(())).collect(),
            Publisher::EventBridge(bus) => bus.publish_all(events).await,
        }
    }

    fn enabled(&self) -> bool {
        !matches!(self, Publisher::Off)
    }
}
