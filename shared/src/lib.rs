//! snapwake's shared core: everything the Lambda functions, the local server and the CLI have
//! in common. The design is in `docs/architecture.md`.
//!
//! Modules are layered in the order they are declared below: each uses only the ones before it
//! (the `layers` test in `shared/tests/` fails on an import that points up). Ports and
//! adapters: the domain imports nothing of ours; adapters depend on their port.

pub mod ambient;
pub mod domain;
pub mod invocation;
pub mod aws_calls;
pub mod aws_json;
pub mod calendar;
pub mod agentkit;
pub mod store;
pub mod budget;
pub mod error;
pub mod usage;
pub mod events;
pub mod identity;
pub mod http;
pub mod locate;
pub mod lock;
pub mod view;
pub mod offboarding;
pub mod index_sync;
pub mod schedule;
pub mod fanout;
pub mod sleep;
pub mod wake;
pub mod config;
pub mod bootstrap;

pub use error::{Error, Result};
