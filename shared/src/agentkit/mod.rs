//! AgentKit: typed actions, the signer, the HTTP client (envelope, retries, pagination, region
//! fallback, credentials). Nothing here logs a secret, a signature or a session `Endpoint`.

pub mod answer;
mod client;
mod rotation;

pub mod credentials;
pub mod limits;
pub mod call_budget;
pub mod pagination;
pub mod port;
pub mod settings;
pub mod signer;
pub mod transport;
pub mod types;

pub use answer::{read_bounded, Unread, MAX_ANSWER_BYTES};
pub use answer::{AgentKitError, Reread};
pub use call_budget::{CallBudget, NoSlot};
pub use client::{AgentKitClient, Regional};
pub use limits::RateLimits;
pub use pagination::{list_all, Paged, Pager};
pub use port::AgentKit;
pub use settings::{AgentKitConfig, CredentialsSource};
pub use signer::Credentials;
pub use transport::{Answered, NoAnswer, Outgoing, Transport};
