//! Who is calling, and what they own, in the order a request finds out (docs/identity.md):
//!
//! 1. the verified claims, normalised from whichever authorizer API Gateway ran: a JWT authorizer's
//! are all strings (an array flattened into `"[a b]"`), a Lambda authorizer's any JSON. Scalars
//! become text, arrays lists of text, and `null` or objects are dropped (they identify nobody).
//!
//! 2. whether they are an admin: the `SNAPWAKE_ADMINS` entries and how a caller's claims match them
//! (docs/identity.md, "Admins"; the threats in docs/security.md).
//!
//! An entry names its claim (`sub:8f3c…`, `email:boss@corp.com`); a bare value matches only the
//! owner claim. One claim only: where people choose a username, someone signing up as
//! `boss@corp.com` must not become the admin whose *email* that is. Values compare ignoring
//! ASCII case only: full Unicode folding would let an attacker pick an identifier that folds
//! onto an admin's (the Kelvin sign `K` lower-cases to `k`). `email` counts only with
//! `email_verified: true`: many providers let a person type any address and verify it later.
//!
//! 3. the caller (owner id, display name, admin), and who may act on an agent;
//! 4. the UserSessionId codec, byte-compatible with the reference Studio (docs/identity.md). A
//! UserSessionId says who owns an agent; three shapes exist on the shared Tools:
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

use super::names::{user_session_id, METADATA_DISPLAY_NAME_KEY};
use super::settings::IdentityConfig;
use crate::agentkit::types::{metadata_value, Snapshot};
use crate::domain::{AgentKey, AgentRecord, Description, Retention};
use crate::error::{Error, Result};
use data_encoding::{BASE32_NOPAD, BASE64URL_NOPAD};
use lambda_http::aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayV2httpRequestContext,
};
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
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

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimValue {
    Text(String),
    /// An array claim (Lambda authorizer only: JWT arrays arrive flattened into [`Self::Text`]).
    List(Vec<String>),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    values: BTreeMap<String, ClaimValue>,
}

impl Claims {
    /// The JWT authorizer's claims when present, else the Lambda authorizer's context. An IAM
    /// authorizer identifies no person, so it yields no claims.
    pub fn from_authorizer(authorizer: &ApiGatewayRequestAuthorizer) -> Claims {
        match &authorizer.jwt {
            Some(jwt) if !jwt.claims.is_empty() => Claims::from_jwt(
                jwt.claims
                    .iter()
                    .map(|(name, value)| (name.as_str(), value.as_str())),
            ),
            _ => Claims::from_lambda(
                authorizer
                    .fields
                    .iter()
                    .map(|(name, value)| (name.as_str(), value)),
            ),
        }
    }

    pub fn from_jwt<'a>(claims: impl IntoIterator<Item = (&'a str, &'a str)>) -> Claims {
        let values = claims
            .into_iter()
            .map(|(name, value)| (name.to_string(), ClaimValue::Text(value.to_string())))
            .collect();
        Claims { values }
    }

    pub fn from_lambda<'a>(fields: impl IntoIterator<Item = (&'a str, &'a Value)>) -> Claims {
        let values = fields
            .into_iter()
            .filter_map(|(name, value)| {
                let value = match value {
                    Value::Array(items) => {
                        ClaimValue::List(items.iter().filter_map(scalar_text).collect())
                    }
                    other => ClaimValue::Text(scalar_text(other)?),
                };
                Some((name.to_string(), value))
            })
            .collect();
        Claims { values }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&ClaimValue> {
        self.values.get(name)
    }

    /// A scalar claim, blank counting as absent. Not trimmed: an owner id compares byte for byte.
    pub fn text(&self, name: &str) -> Option<&str> {
        match self.values.get(name)? {
            ClaimValue::Text(t) if !t.trim().is_empty() => Some(t),
            _ => None,
        }
    }

    /// Every value of a claim: a scalar is one value, an array each of its items.
    pub fn values(&self, name: &str) -> Vec<&str> {
        match self.values.get(name) {
            Some(ClaimValue::Text(t)) => vec![t.as_str()],
            Some(ClaimValue::List(items)) => items.iter().map(String::as_str).collect(),
            None => Vec::new(),
        }
    }

    /// A group-like claim as a list of names ([`parse_group_list`]).
    pub fn groups(&self, name: &str) -> Vec<String> {
        match self.values.get(name) {
            Some(ClaimValue::Text(t)) => parse_group_list(t),
            Some(ClaimValue::List(items)) => items
                .iter()
                .map(|g| g.trim())
                .filter(|g| !g.is_empty())
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        }
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// The group names in a group claim that arrived as a string: API Gateway's flattened array
/// `[admins devs]`, a stringified JSON array `["admins","devs"]`, or a comma list. Inside
/// brackets commas and whitespace separate names, outside only commas, so a plain single value
/// is taken whole.
pub fn parse_group_list(raw: &str) -> Vec<String> {
    let trimmed = raw.trim();
    let names: Vec<&str> = match trimmed
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
    {
        Some(inner) => {
            if let Ok(items) = serde_json::from_str::<Vec<Value>>(trimmed) {
                return items
                    .iter()
                    .filter_map(scalar_text)
                    .map(|g| g.trim().to_string())
                    .filter(|g| !g.is_empty())
                    .collect();
            }
            inner
                .split(|c: char| c == ',' || c.is_whitespace())
                .collect()
        }
        None => trimmed.split(',').collect(),
    };
    names
        .into_iter()
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .map(str::to_string)
        .collect()
}

/// The claim whose value is trusted only when `email_verified` is `true`.
pub const EMAIL_CLAIM: &str = "email";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminEntry {
    /// The claim to look in; `None` for a bare value (the owner claim).
    pub claim: Option<String>,
    pub value: String,
}

impl AdminEntry {
    pub fn bare(value: impl Into<String>) -> AdminEntry {
        AdminEntry {
            claim: None,
            value: value.into(),
        }
    }

    pub fn in_claim(claim: impl Into<String>, value: impl Into<String>) -> AdminEntry {
        AdminEntry {
            claim: Some(claim.into()),
            value: value.into(),
        }
    }

    /// Reads one entry: `claim:value` when `claim` is an owner claim or `email`, else a bare
    /// value, colons and all (a `sub` may hold colons: `urn:…`). The longest matching claim name
    /// wins, so `custom:staff_id` works too.
    pub fn parse(raw: &str, claims: &[String]) -> AdminEntry {
        let raw = raw.trim();
        let value_after = |claim: &str| {
            raw.strip_prefix(claim)?
                .strip_prefix(':')
                .map(str::trim)
                .filter(|value| !value.is_empty())
        };
        claims
            .iter()
            .map(String::as_str)
            .chain([EMAIL_CLAIM])
            .filter_map(|claim| Some((claim, value_after(claim)?)))
            .max_by_key(|(claim, _)| claim.len())
            .map_or_else(
                || AdminEntry::bare(raw),
                |(claim, value)| AdminEntry::in_claim(claim, value),
            )
    }

    /// Whether a caller whose owner id came from `owner_claim` matches this entry.
    pub fn matches(&self, claims: &Claims, owner_claim: &str) -> bool {
        let claim = self.claim.as_deref().unwrap_or(owner_claim);
        if claim == EMAIL_CLAIM && !email_verified(claims) {
            return false;
        }
        claims
            .values(claim)
            .into_iter()
            .filter(|value| !value.trim().is_empty())
            .any(|value| value.eq_ignore_ascii_case(&self.value))
    }
}

/// `email_verified` is `true` (a JWT carries it as the string `"true"`, a Lambda authorizer
/// as a boolean; [`Claims`] makes both text).
fn email_verified(claims: &Claims) -> bool {
    claims
        .text("email_verified")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
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
    format!("{}{}", prefix(owner), crate::ids::fresh_hex())
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod admins_tests {
    use super::*;

    fn owner_claims() -> Vec<String> {
        super::super::DEFAULT_OWNER_CLAIMS
            .iter()
            .map(|c| c.to_string())
            .collect()
    }

    #[test]
    fn entries_name_known_claims_only() {
        let claims = owner_claims();
        assert_eq!(
            AdminEntry::parse(" sub:1234 ", &claims),
            AdminEntry::in_claim("sub", "1234")
        );
        assert_eq!(
            AdminEntry::parse("email:Boss@Corp.com", &claims),
            AdminEntry::in_claim("email", "Boss@Corp.com")
        );
        // Not a claim name: the whole text is the value.
        assert_eq!(
            AdminEntry::parse("urn:example:boss", &claims),
            AdminEntry::bare("urn:example:boss")
        );
        assert_eq!(AdminEntry::parse("sub:", &claims), AdminEntry::bare("sub:"));
        assert_eq!(
            AdminEntry::parse("boss@corp.com", &claims),
            AdminEntry::bare("boss@corp.com")
        );
        // A claim with a colon in its name, when configured as an owner claim.
        let custom = vec!["custom:staff_id".to_string(), "custom".to_string()];
        assert_eq!(
            AdminEntry::parse("custom:staff_id:42", &custom),
            AdminEntry::in_claim("custom:staff_id", "42")
        );
    }

    #[test]
    fn a_value_matches_in_its_own_claim_only() {
        let chosen = Claims::from_jwt([("sub", "s-9"), ("username", "boss@corp.com")]);
        assert!(!AdminEntry::bare("boss@corp.com").matches(&chosen, "sub"));
        assert!(!AdminEntry::in_claim("email", "boss@corp.com").matches(&chosen, "sub"));
        assert!(AdminEntry::in_claim("username", "boss@corp.com").matches(&chosen, "sub"));
        assert!(AdminEntry::bare("S-9").matches(&chosen, "sub"));
    }

    #[test]
    fn only_ascii_case_folds() {
        let kelvin = Claims::from_jwt([
            ("sub", "\u{212A}ate@corp.com"),
            ("email", "\u{212A}ate@corp.com"),
            ("email_verified", "true"),
        ]);
        assert!(!AdminEntry::bare("kate@corp.com").matches(&kelvin, "sub"));
        assert!(!AdminEntry::in_claim("email", "kate@corp.com").matches(&kelvin, "sub"));
        let kate = Claims::from_jwt([("sub", "Kate@Corp.COM")]);
        assert!(AdminEntry::bare("kate@corp.com").matches(&kate, "sub"));
    }

    #[test]
    fn email_needs_email_verified_true() {
        for (verified, admin) in [
            (None, false),
            (Some("false"), false),
            (Some(""), false),
            (Some("yes"), false),
            (Some("true"), true),
            (Some("TRUE"), true),
        ] {
            let mut fields = vec![("sub", "s-1"), ("email", "boss@corp.com")];
            fields.extend(verified.map(|v| ("email_verified", v)));
            let claims = Claims::from_jwt(fields);
            let entry = AdminEntry::in_claim("email", "boss@corp.com");
            assert_eq!(entry.matches(&claims, "sub"), admin, "{verified:?}");
            // The same rule when the owner id itself is the email.
            assert_eq!(
                AdminEntry::bare("boss@corp.com").matches(&claims, "email"),
                admin
            );
        }
    }
}

#[cfg(test)]
mod usid_tests {
    use super::*;

    #[test]
    fn parse_tells_the_shapes_apart() {
        assert_eq!(
            UserSessionId::parse("studio-alice-0123abcd"),
            UserSessionId::Current {
                safe_owner: "alice".into(),
                rest: "0123abcd".into()
            }
        );
        assert_eq!(
            UserSessionId::parse("studio-1b4e28ba-2fa1-11d2-883f-0016d3cca427").format_name(),
            "older"
        );
        assert_eq!(
            UserSessionId::parse("studio-1B4E28BA-2FA1-11D2-883F-0016D3CCA427").format_name(),
            "older"
        );
        // One group too long: not a UUID, so the first group reads as a safe owner.
        assert_eq!(
            UserSessionId::parse("studio-1b4e28ba-2fa1-11d2-883f-0016d3cca4270").owner_key(),
            Some("studio-1b4e28ba".into())
        );
        for unowned in [
            "",
            "studio-",
            "studio-alice",
            "studio-alice-",
            "studio--x",
            "studio-a.b-x",
            "studio-0123456789abcdef0123456789abcdef",
            "snapshot-abc",
            "studio2-2bd806c97f0e00af-random",
            "studio2-2BD806C97F0E00AF-r-QQ",
            "studio2-2bd806c97f0e00a-r-QQ",
        ] {
            let parsed = UserSessionId::parse(unowned);
            assert_eq!(parsed, UserSessionId::Unowned, "{unowned:?}");
            assert_eq!(parsed.owner_key(), None);
        }
    }

    #[test]
    fn legacy_names_decode_or_own_nothing() {
        let id = UserSessionId::parse("studio2-2bd806c97f0e00af-r-");
        assert_eq!(id.legacy_name(), Some(""));
        assert_eq!(id.owner_key(), Some("studio2-2bd806c97f0e00af".into()));
        // `!` is not base64url; `_w` decodes to 0xff, which is not UTF-8.
        for bad in [
            "studio2-2bd806c97f0e00af-r-!!",
            "studio2-2bd806c97f0e00af-r-_w",
        ] {
            let id = UserSessionId::parse(bad);
            assert_eq!(id.format_name(), "legacy");
            assert_eq!(id.legacy_name(), None);
            assert_eq!(id.owner_key(), None);
            assert!(!belongs_to(bad, "alice"));
        }
    }

    #[test]
    fn an_empty_owner_encodes_to_u_() {
        assert_eq!(safe_owner(""), "u_");
        assert_eq!(prefix(""), "studio-u_-");
    }

    #[test]
    fn minted_ids_have_the_documented_shape() {
        let id = mint("alice");
        let hex = id.strip_prefix("studio-alice-").unwrap();
        assert_eq!(hex.len(), 32);
        assert!(hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_ne!(mint("alice"), id);
    }
}
