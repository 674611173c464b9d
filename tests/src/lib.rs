//! What snapwake's integration tests and benchmarks share (the tests live in `tests/`, the
//! benchmarks in `benches/`): a DynamoDB Local table per test, a simulated AgentKit with Tools
//! and a registry, API Gateway requests built from a real event, every function wired like
//! API Gateway routes them, stores and AgentKits that count, delay or pause calls, a fault
//! proxy on the wire to DynamoDB Local, and a fake Lambda Runtime API to run handlers inside
//! the real runtime loop, and a recording EventBridge.
//!
//! `use snapwake_tests::*;` brings all of it.

mod agentkit;
mod api;
pub mod captured_log;
pub mod counting;
pub mod deployment;
pub mod event_bus;
pub mod fleet;
pub mod iam;
pub mod lost_answers;
pub mod relay;
pub mod usage_count;
mod requests;
mod runtime;
pub mod stalling;
pub mod runtime_api;
pub mod sigv4;
pub mod sqs_queue;
mod store;
pub mod template;
pub mod wire;
mod world;

pub use agentkit::*;
pub use api::*;
pub use requests::*;
pub use runtime::*;
pub use store::*;
pub use world::*;
