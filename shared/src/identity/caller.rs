//! Who is calling, and what they own (docs/identity.md): the caller (owner id, display name,
//! admin) from the claims ([`super::claims`]), who may act on an agent, and the UserSessionId
//! codec, byte-compatible with the reference Studio.
//!
//! A UserSessionId says who owns an agent; three shapes exist on the shared Tools:
//!
//! - current `studio-<safe_owner>-<32 lowercase hex>`, written by [`mint`];
//! - legacy `studio2-<fingerprint>-<random>-<base64url name>`, read only;
//! - older `studio-<uuid with dashes>`, read only and ownerless.
//!
//! An older id is exactly `studio-` and an 8-4-4-4-12 hex UUID (either case); anything else
//! after `studio-` with a `-` is current, the safe owner running to the first `-`. A safe owner
//! of 8 hex (`deadbeef`) is ambiguous only against hand-made older ids: [`belongs_to`] goes by
//! prefix as the Studio does, while [`UserSessionId::parse`] calls the exact older shape
//! ownerless. Minted ids end in 32 hex without dashes, so they are never ambiguous.
//!
//! Kept for compatibility: a truncated safe owner (rule 3) is `<127 chars>_<32 hex>`, exactly
//! 160 characters, so an owner id of that shape (kept as is by rule 1) would share its prefix;
//! exploiting it needs the other owner's id and hash, and a provider allowing such ids.
//!
//! Agent names: which display name an agent shows, and which names and agent ids are accepted.

use super::claims::{Claims, IdentityConfig};
use crate::agentkit::types::{metadata_value, Snapshot};
use crate::domain::{AgentKey, AgentRecord, Description, Retention};
use crate::error::{Error, Result};
use data_encoding::{BASE32_NOPAD, BASE64URL_NOPAD};
use lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext;
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Claims tried in order for the display name (docs/identity.md).
pub const DISPLAY_NAME_CLAIMS: [&str; 5] =
    ["email", "preferred_username", "username", "login", "name"];

/// Claims that may carry group names.
pub const GROUP_CLAIMS: [&str; 2] = ["cognito:groups", "groups"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The stable id that scopes every agent (never empty).
    pub owner: String,
    pub display_name: String,
    /// Admins see and act on every owner's agents.
    pub is_admin: bool,
}

impl Caller {
    /// A caller of the local development server, which trusts its own headers; never in Lambda.
    pub fn local(owner: impl Into<String>, is_admin: bool) -> Caller {
        let owner = owner.into();
        Caller {
            display_name: owner.clone(),
            owner,
            is_admin,
        }
    }

    /// The caller of an API Gateway HTTP API (payload 2.0) request; without that request
    /// context there is no verified identity: [`Error::Unauthenticated`].
    pub fn from_request(request: &lambda_http::Request, config: &IdentityConfig) -> Result<Caller> {
        match request.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(ctx)) => Caller::from_request_context(ctx, config),
            _ => Err(Error::Unauthenticated),
        }
    }

    /// The caller of an HTTP API request context: its JWT or Lambda authorizer's claims.
    pub fn from_request_context(
        ctx: &ApiGatewayV2httpRequestContext,
        config: &IdentityConfig,
    ) -> Result<Caller> {
        let authorizer = ctx.authorizer.as_ref().ok_or(Error::Unauthenticated)?;
        Caller::from_claims(&Claims::from_authorizer(authorizer), config)
    }

    /// The caller that verified claims describe (docs/identity.md): the owner id is the first
    /// non-blank of `config.owner_claims` (none: unauthenticated), the display name the first of
    /// [`DISPLAY_NAME_CLAIMS`], else the owner id. Admin when an [`AdminEntry`](super::AdminEntry)
    /// matches or a group claim names one of `config.admin_groups`, compared exactly: identity
    /// providers treat group names as case-sensitive. Nobody is an admin unless configured.
    pub fn from_claims(claims: &Claims, config: &IdentityConfig) -> Result<Caller> {
        let (owner_claim, owner) = config
            .owner_claims
            .iter()
            .find_map(|name| Some((name.as_str(), claims.text(name)?)))
            .ok_or(Error::Unauthenticated)?;
        let owner = owner.to_string();
        let display_name = DISPLAY_NAME_CLAIMS
            .iter()
            .find_map(|name| claims.text(name))
            .map_or_else(|| owner.clone(), str::to_string);
        let is_admin = is_admin(claims, owner_claim, config);
        Ok(Caller {
            owner,
            display_name,
            is_admin,
        })
    }

    /// This caller's owner-index keys, current and legacy (docs/identity.md, "Owner keys").
    pub fn owner_keys(&self) -> [String; 2] {
        owner_keys(&self.owner)
    }

    /// Whether this caller may act on the agent with `user_session_id` (admins: every agent).
    pub fn may_access(&self, user_session_id: Option<&str>) -> bool {
        self.is_admin || user_session_id.is_some_and(|id| belongs_to(id, &self.owner))
    }
}

fn is_admin(claims: &Claims, owner_claim: &str, config: &IdentityConfig) -> bool {
    let by_identifier = config
        .admins
        .iter()
        .any(|entry| entry.matches(claims, owner_claim));
    let by_group = !config.admin_groups.is_empty()
        && GROUP_CLAIMS
            .iter()
            .flat_map(|name| claims.groups(name))
            .any(|group| config.admin_groups.contains(&group));
    by_identifier || by_group
}

// ---- Who may act on an agent, and whom the first write of its record names as owner.

/// Whether `caller` may see and act on `key`: admins always; others when the record names
/// them, or when the UserSessionId is theirs. `snapshot-<id>` agents are admin-only.
pub fn may_act(caller: &Caller, key: &AgentKey, record: Option<&AgentRecord>) -> bool {
    if caller.is_admin {
        return true;
    }
    if record.and_then(|r| r.description.owner.as_deref()) == Some(caller.owner.as_str()) {
        return true;
    }
    user_session_id(&key.agent_id).is_some_and(|id| belongs_to(id, &caller.owner))
}

/// Where an agent lives, as a record describes it: its Tool, the Tool's region and retention.
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    pub tool_id: &'a str,
    pub region: &'a str,
    pub retention: Retention,
}

/// What the first write of an agent's record should say: the record's own fields first, then
/// what the UserSessionId and the snapshots' metadata tell; `place` adds the Tool when known.
pub fn describe(
    caller: &Caller,
    key: &AgentKey,
    record: Option<&AgentRecord>,
    place: Option<Place<'_>>,
    snapshots: Option<&[Snapshot]>,
) -> Description {
    let usid = user_session_id(&key.agent_id);
    // Only the caller's own agent names its raw owner: an admin must not be recorded as owner.
    let owner = record
        .and_then(|r| r.description.owner.clone())
        .or_else(|| {
            usid.filter(|id| belongs_to(id, &caller.owner))
                .map(|_| caller.owner.clone())
        });
    let metadata_name = snapshots.and_then(|s| {
        s.iter().find_map(|s| {
            metadata_value(&s.session_metadata, METADATA_DISPLAY_NAME_KEY).map(str::to_string)
        })
    });
    Description {
        owner,
        owner_key: usid.and_then(|id| UserSessionId::parse(id).owner_key()),
        display_name: record
            .and_then(|r| r.description.display_name.clone())
            .or(metadata_name),
        tool_id: place.map(|p| p.tool_id.to_string()),
        region: place.map(|p| p.region.to_string()),
        retention: record
            .and_then(|r| r.description.retention)
            .or(place.map(|p| p.retention)),
        ..Description::default()
    }
}

/// Prefix of current and older UserSessionIds.
pub const CURRENT_PREFIX: &str = "studio-";
pub const LEGACY_PREFIX: &str = "studio2-";
/// The longest UserSessionId AgentKit accepts.
pub const MAX_LEN: usize = 200;
/// The longest safe owner: 200 − len("studio") − 32 − 2 (docs/identity.md, "The safe owner").
pub const MAX_SAFE_OWNER_LEN: usize = MAX_LEN - "studio".len() - 32 - 2;
/// Characters of a truncated safe owner kept before `_<hash>`.
const TRUNCATED_KEEP: usize = 127;
/// Hex characters of SHA-256(owner) that end a truncated safe owner.
const TRUNCATED_HASH_HEX: usize = 32;
const FINGERPRINT_HEX: usize = 16;

/// The owner as it appears in a current UserSessionId (docs/identity.md, "The safe owner"):
/// only `[A-Za-z0-9_]`, at most 160 characters. The empty owner (never from a request) encodes
/// by rule 2 to `u_`, which no other owner produces.
pub fn safe_owner(owner: &str) -> String {
    let plain = !owner.is_empty()
        && owner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !owner.starts_with("u_");
    let safe = if plain {
        owner.to_string()
    } else {
        format!("u_{}", BASE32_NOPAD.encode(owner.as_bytes()))
    };
    if safe.len() <= MAX_SAFE_OWNER_LEN {
        return safe;
    }
    // `safe` is ASCII here, so byte slicing is character slicing.
    let hash = hex::encode(Sha256::digest(owner.as_bytes()));
    format!(
        "{}_{}",
        &safe[..TRUNCATED_KEEP],
        &hash[..TRUNCATED_HASH_HEX]
    )
}

/// `studio-<safe_owner>-`: every current UserSessionId of `owner` starts with it.
pub fn prefix(owner: &str) -> String {
    format!("{CURRENT_PREFIX}{}-", safe_owner(owner))
}

/// A fresh current-format UserSessionId: the prefix and a v4 UUID as 32 lowercase hex.
pub fn mint(owner: &str) -> String {
    format!("{}{}", prefix(owner), crate::ambient::fresh_hex())
}

/// The legacy fingerprint of `owner`: the first 16 hex characters of SHA-256(owner).
pub fn fingerprint(owner: &str) -> String {
    let mut hash = hex::encode(Sha256::digest(owner.as_bytes()));
    hash.truncate(FINGERPRINT_HEX);
    hash
}

/// The owner-index keys of `owner`: `studio-<safe_owner>` and `studio2-<fingerprint>`. An
/// agent's [`UserSessionId::owner_key`] equals one exactly when [`belongs_to`] says it is the
/// owner's (hand-made older-shape ids aside).
pub fn owner_keys(owner: &str) -> [String; 2] {
    [
        format!("{CURRENT_PREFIX}{}", safe_owner(owner)),
        format!("{LEGACY_PREFIX}{}", fingerprint(owner)),
    ]
}

/// Whether the agent with `user_session_id` belongs to `owner` (docs/identity.md): a current
/// id starting `studio-<safe_owner(owner)>-` with more after, or a legacy one whose fingerprint
/// matches (constant-time) and whose name decodes. Other ids belong to no one.
pub fn belongs_to(user_session_id: &str, owner: &str) -> bool {
    if let Some(rest) = user_session_id.strip_prefix(&prefix(owner)) {
        return !rest.is_empty();
    }
    match UserSessionId::parse(user_session_id) {
        UserSessionId::Legacy {
            fingerprint: h,
            name: Some(_),
            ..
        } => bool::from(h.as_bytes().ct_eq(fingerprint(owner).as_bytes())),
        _ => false,
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserSessionId {
    /// `studio-<safe_owner>-<rest>`: written by snapwake and the current Studio.
    Current {
        /// The encoded owner (not reversible when truncated).
        safe_owner: String,
        /// What follows the owner: 32 hex when minted, not validated.
        rest: String,
    },
    /// `studio2-<fingerprint>-<random>-<name>`: written by an earlier Studio.
    Legacy {
        fingerprint: String,
        /// Not validated (the Studio never checked it).
        random: String,
        /// Decoded from base64url; `None` when not UTF-8, which leaves the agent ownerless.
        name: Option<String>,
    },
    /// `studio-<uuid with dashes>`: created before ids carried an owner; ownerless.
    Older { uuid: String },
    /// No recognised shape: ownerless.
    Unowned,
}

impl UserSessionId {
    pub fn parse(id: &str) -> UserSessionId {
        if let Some(rest) = id.strip_prefix(LEGACY_PREFIX) {
            return parse_legacy(rest);
        }
        let Some(rest) = id.strip_prefix(CURRENT_PREFIX) else {
            return UserSessionId::Unowned;
        };
        if is_dashed_uuid(rest) {
            return UserSessionId::Older {
                uuid: rest.to_string(),
            };
        }
        match rest.split_once('-') {
            Some((safe, after))
                if !safe.is_empty()
                    && !after.is_empty()
                    && safe.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                UserSessionId::Current {
                    safe_owner: safe.to_string(),
                    rest: after.to_string(),
                }
            }
            _ => UserSessionId::Unowned,
        }
    }

    /// The owner-index key; `None` for an agent that belongs to no one.
    pub fn owner_key(&self) -> Option<String> {
        match self {
            UserSessionId::Current { safe_owner, .. } => {
                Some(format!("{CURRENT_PREFIX}{safe_owner}"))
            }
            UserSessionId::Legacy {
                fingerprint,
                name: Some(_),
                ..
            } => Some(format!("{LEGACY_PREFIX}{fingerprint}")),
            _ => None,
        }
    }

    pub fn legacy_name(&self) -> Option<&str> {
        match self {
            UserSessionId::Legacy { name, .. } => name.as_deref(),
            _ => None,
        }
    }

    pub fn format_name(&self) -> &'static str {
        match self {
            UserSessionId::Current { .. } => "current",
            UserSessionId::Legacy { .. } => "legacy",
            UserSessionId::Older { .. } => "older",
            UserSessionId::Unowned => "unowned",
        }
    }
}

/// `<h>-<r>-<n>` after `studio2-`: split on `-` at most three times in all, so `n` (base64url,
/// whose alphabet includes `-`) keeps its dashes. `h` must be 16 lowercase hex characters, the
/// only form a fingerprint takes; otherwise the id is not legacy.
fn parse_legacy(rest: &str) -> UserSessionId {
    let mut parts = rest.splitn(3, '-');
    let (Some(h), Some(r), Some(n)) = (parts.next(), parts.next(), parts.next()) else {
        return UserSessionId::Unowned;
    };
    let is_fingerprint = h.len() == FINGERPRINT_HEX
        && h.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !is_fingerprint {
        return UserSessionId::Unowned;
    }
    let name = BASE64URL_NOPAD
        .decode(n.as_bytes())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok());
    UserSessionId::Legacy {
        fingerprint: h.to_string(),
        random: r.to_string(),
        name,
    }
}

fn is_dashed_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The prefix of agent ids made for snapshots without a UserSessionId.
pub const SNAPSHOT_AGENT_PREFIX: &str = "snapshot-";

/// The UserSessionId of an agent id (`None` for `snapshot-<id>` agents).
pub fn user_session_id(agent_id: &str) -> Option<&str> {
    (!agent_id.starts_with(SNAPSHOT_AGENT_PREFIX)).then_some(agent_id)
}

/// The session `Metadata` / snapshot `SessionMetadata` key holding a display name.
pub const METADATA_DISPLAY_NAME_KEY: &str = "veadk_display_name";

pub const MAX_DISPLAY_NAME_CHARS: usize = 40;
pub const MAX_AGENT_ID_LEN: usize = 200;

/// The display name of an agent, the first non-blank of (docs/identity.md): the agent record,
/// the `veadk_display_name` metadata, a legacy UserSessionId's name, the UserSessionId, the
/// SnapshotId. Blank counts as absent, so no agent shows an empty name while a better exists.
pub fn display_name(
    record_name: Option<&str>,
    metadata_name: Option<&str>,
    user_session_id: Option<&str>,
    snapshot_id: Option<&str>,
) -> String {
    let legacy = user_session_id.map(UserSessionId::parse);
    let legacy_name = legacy.as_ref().and_then(UserSessionId::legacy_name);
    let name = [
        record_name,
        metadata_name,
        legacy_name,
        user_session_id,
        snapshot_id,
    ]
    .into_iter()
    .flatten()
    .find(|name| !name.trim().is_empty())
    .unwrap_or_default()
    .to_string();
    name
}

/// A display name given to `POST /v1/agents`, trimmed: 1–40 characters (not bytes), no control
/// characters; else 422 `INVALID_REQUEST` (well-formed, but not acceptable).
pub fn validate_display_name(name: &str) -> Result<String> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return Err(Error::unprocessable("display_name must not be empty"));
    }
    let chars = trimmed.chars().count();
    if chars > MAX_DISPLAY_NAME_CHARS {
        return Err(Error::unprocessable(format!(
            "display_name must be at most {MAX_DISPLAY_NAME_CHARS} characters (got {chars})"
        )));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(Error::unprocessable(
            "display_name must not contain control characters",
        ));
    }
    Ok(trimmed.to_string())
}

/// Whether `id` is an acceptable `{agent_id}`: `^[A-Za-z0-9_.:-]{1,200}$` (docs/http-api.md).
pub fn is_valid_agent_id(id: &str) -> bool {
    (1..=MAX_AGENT_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// An `{agent_id}` path segment (already percent-decoded once), or 400 `INVALID_REQUEST`.
pub fn validate_agent_id(id: &str) -> Result<&str> {
    if is_valid_agent_id(id) {
        Ok(id)
    } else {
        Err(Error::bad_request(
            "agent_id must be 1-200 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-'",
        ))
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod usid_tests;

#[cfg(test)]
mod names_tests;
