//! The AgentKit actions snapwake calls, as typed requests and results: the wire contract the
//! client and the simulator share (docs/agentkit.md, "Actions used"), re-exported as `types::X`.
//! Results ignore unknown fields and leave optional what the service may omit, so a newer API
//! version still reads; requests refuse unknown fields (the simulator is as strict as the service).

mod resources;
mod sessions;
mod tools;

pub use resources::*;
pub use sessions::*;
pub use tools::*;

#[cfg(test)]
mod tests;
