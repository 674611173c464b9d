//! AgentKit: typed actions, the signer, the HTTP client (envelope, retries, pagination, region
//! fallback, credentials). Nothing here logs a secret, a signature or a session `Endpoint`.

pub mod answer;
pub mod client;

pub mod credentials;
pub mod port;
pub mod settings;
pub mod signer;
pub mod types;

pub use answer::{read_bounded, Unread, MAX_ANSWER_BYTES};
pub use answer::{AgentKitError, Reread};
pub use client::{AgentKitClient, Regional};
pub use port::AgentKit;
pub use port::RateLimits;
pub use port::{list_all, Paged, Pager};
pub use port::{Answered, NoAnswer, Outgoing, Transport};
pub use port::{CallBudget, NoSlot};
pub use settings::{AgentKitConfig, CredentialsSource};
pub use signer::Credentials;
