//! Who the caller is, and the UserSessionId codec that says who owns an agent (docs/identity.md).
//! Nobody is an admin unless configured. Lambda reads identity only from the verified request
//! context, never headers; the local server's `X-Snapwake-*` headers go through [`Caller::local`].

pub mod caller;
pub mod claims;

pub use caller::{belongs_to, fingerprint, mint, owner_keys, prefix, safe_owner, UserSessionId};
pub use caller::{describe, may_act, user_session_id, Caller, Place, SNAPSHOT_AGENT_PREFIX};
pub use caller::{display_name, is_valid_agent_id, validate_agent_id, validate_display_name};
pub use claims::{AdminEntry, ClaimValue, Claims};
pub use claims::{IdentityConfig, DEFAULT_OWNER_CLAIMS};
