//! The AgentKit actions snapwake calls, as typed requests and results (docs/agentkit.md, "Actions
//! used"). Field names are PascalCase on the wire; absent optional fields are omitted. Every
//! object field the service may leave out is optional, and unknown fields are ignored, so a
//! newer API version does not break reading.
//!
//! Each request type implements [`Action`], which names the action and its result type; the
//! client and the simulator both speak through these types. Requests refuse unknown fields
//! when read (the simulator is as strict as the service); results ignore them.
//!
//! These are the wire types of the service, which the simulator speaks too: one module, in the
//! order of the API's reference (the records and shared fields in `resources.rs`, then
//! sessions, snapshots and Tools, a file each), every type re-exported here so the contract is `types::X` in one place.

mod resources;
mod sessions;
mod snapshots;
mod tools;

pub use resources::*;
pub use sessions::*;
pub use snapshots::*;
pub use tools::*;

#[cfg(test)]
mod tests;
