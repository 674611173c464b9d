//! AgentKit: the typed actions, the request signer, the HTTP client (envelope, retries,
//! pagination, region fallback, credentials) and, behind the `sim` feature, a strict simulator.
//!
//! The client never logs a secret, a signature or a session `Endpoint`.

mod error;

pub mod envelope;
pub mod signer;
pub mod types;

#[cfg(feature = "sim")]
pub mod sim;

pub use error::AgentKitError;
pub use signer::Credentials;
