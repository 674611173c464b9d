//! State-change events (docs/events.md): what a write records of the change it is
//! ([`announcement`]), the event derived from the table's change stream ([`derive`]), handing
//! them to the bus in order ([`relay`]), the port a publisher implements ([`EventSink`]) and
//! its adapters: EventBridge ([`eventbridge`]), none, and (feature `memory`) a recording one
//! for local runs and tests ([`recorded`]).
//!
//! Why from the stream: a state change is one conditional write, and the write itself carries
//! what it means (`Changes::announce`, stored on the record). The table's stream delivers
//! every landed write at least once, whatever becomes of the function that made it (killed
//! after the write, its answer lost, its deadline passed), so the consumer that derives the
//! events from it announces each change exactly when it happened. The request path never
//! waits on the bus. A storm of 500 callers that ends in one completion is one write, so one
//! event, whose `change_id` is that write's version.
//!
//! What set the change off (`trigger`) is the invocation's (`crate::invocation`): HTTP unless
//! its entry point said otherwise (the tick, the sweep, an offboarding), or AgentKit for what
//! snapwake learns of its clock.

mod derive;
pub mod eventbridge;
#[cfg(feature = "memory")]
pub mod recorded;
pub mod relay;
mod sink;

use crate::domain::{Announce, Announcement, StateEvent};

pub use derive::{derive, event_of};
pub use relay::{announce, follow, Relayed};
pub use sink::{EventError, EventSink};

/// What a write that is the state change `what` records, set off by the current task.
pub fn announcement(what: Announce) -> Announcement {
    Announcement {
        what,
        trigger: crate::invocation::trigger(),
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
