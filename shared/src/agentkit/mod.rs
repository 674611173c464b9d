//! AgentKit: typed actions, the signer, the HTTP client (envelope, retries, pagination, region
//! fallback, credentials). Nothing here logs a secret, a signature or a session `Endpoint`.

mod bounded;
mod client;
mod error;
mod rotation;

pub mod credentials;
pub mod codes;
pub mod envelope;
pub mod limits;
pub mod call_budget;
pub mod pagination;
pub mod port;
pub mod retry;
pub mod settings;
pub mod signer;
pub mod transport;
pub mod types;

pub use bounded::{read_bounded, Unread, MAX_ANSWER_BYTES};
pub use call_budget::{CallBudget, NoSlot};
pub use client::{AgentKitClient, Regional};
pub use error::{AgentKitError, Reread};
pub use limits::RateLimits;
pub use pagination::{list_all, Paged, Pager};
pub use port::AgentKit;
pub use settings::{AgentKitConfig, CredentialsSource};
pub use signer::Credentials;
pub use transport::{Answered, NoAnswer, Outgoing, Transport};
