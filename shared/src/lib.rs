//! snapwake's shared core: everything the Lambda functions, the local server and the CLI have
//! in common.
//!
//! The crate is laid out as ports and adapters:
//!
//! - [`domain`]: kinds, retention, the agent, session and snapshot views (no I/O);
//! - [`identity`]: the caller read from an API Gateway request, and the UserSessionId codec;
//! - [`agentkit`]: the AgentKit client (signing, envelope, retries, regions); the strict
//!   simulator of the service is its own crate, `snapwake-sim`;
//! - [`lock`]: the per-agent lock (acquire, fenced writes, writes by anyone, poll leases,
//!   the pure `decide`) that wake, create, delete and deploy share;
//! - [`wake`]: the wake protocol over the lock (docs/wake-protocol.md);
//! - [`sleep`]: sleep now over the same lock: snapshot, wait until Ready, end the session;
//! - [`http`]: problem+json responses;
//! - [`config`]: environment → typed configuration, validated once at cold start;
//! - [`error`]: the one error type, mapped to problem+json in [`http::problem`].
//!
//! Dependencies point one way: the domain imports nothing of ours; adapters depend on ports.

pub mod agentkit;
pub mod bootstrap;
pub mod config;
pub mod deadline;
pub mod deploy;
pub mod domain;
pub mod error;
pub mod http;
pub mod identity;
pub mod index_sync;
pub mod locate;
pub mod lock;
pub mod registry;
pub mod sleep;
pub mod store;
pub mod timestamp;
pub mod view;
pub mod wake;

pub use error::{Error, Result};
