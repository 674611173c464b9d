//! The AgentKit simulator (work in progress).
