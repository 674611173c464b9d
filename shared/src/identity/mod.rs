//! Who the caller is, and the UserSessionId codec that says who owns an agent (docs/identity.md).
//!
//! - [`caller`]: the [`Caller`] (owner id, display name, admin) built from the verified claims
//!   of the API Gateway authorizer (JWT or Lambda), normalised; who may act on an agent, and
//!   whom its record names as owner;
//! - [`usid`]: UserSessionId encoding, parsing, ownership and owner-index keys;
//! - [`names`]: agent display names (resolution and validation) and agent id validation;
//! - [`admins`]: the `SNAPWAKE_ADMINS` entries and how claims match them;
//! - [`settings`]: which claims name a person, and who is an admin.
//!
//! Nobody is an admin unless `SNAPWAKE_ADMINS` or `SNAPWAKE_ADMIN_GROUPS` says so. The Lambda
//! functions read identity only from the verified request context, never from headers; the
//! local server's `X-Snapwake-User` / `X-Snapwake-Admin` headers go through [`Caller::local`].

pub mod admins;
pub mod caller;
pub mod claims;
pub mod names;
pub mod settings;
pub mod usid;

pub use admins::AdminEntry;
pub use caller::{describe, may_act, Caller, Place};
pub use claims::{ClaimValue, Claims};
pub use names::{
    display_name, is_valid_agent_id, user_session_id, validate_agent_id, validate_display_name,
    SNAPSHOT_AGENT_PREFIX,
};
pub use settings::{IdentityConfig, DEFAULT_OWNER_CLAIMS};
pub use usid::{belongs_to, fingerprint, mint, owner_keys, prefix, safe_owner, UserSessionId};
