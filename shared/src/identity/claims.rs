//! What the authorizer says about a caller, and what snapwake makes of it (docs/identity.md):
//!
//! - the identity settings ([`IdentityConfig`]): which claims name a person and who is an
//!   admin, built by `crate::config` at cold start;
//! - the verified claims, normalised from whichever authorizer API Gateway ran: a JWT
//!   authorizer's are all strings (an array flattened into `"[a b]"`), a Lambda authorizer's
//!   any JSON. Scalars become text, arrays lists of text, and `null` or objects are dropped
//!   (they identify nobody);
//! - whether they are an admin: the `SNAPWAKE_ADMINS` entries and how a caller's claims match
//!   them ("Admins"; the threats in docs/security.md). An entry names its claim (`sub:8f3c…`,
//!   `email:boss@corp.com`); a bare value matches only the owner claim. One claim only: where
//!   people choose a username, someone signing up as `boss@corp.com` must not become the admin
//!   whose *email* that is. Values compare ignoring ASCII case only: full Unicode folding would
//!   let an attacker pick an identifier that folds onto an admin's (the Kelvin sign `K`
//!   lower-cases to `k`). `email` counts only with `email_verified: true`: many providers let a
//!   person type any address and verify it later.

use lambda_http::aws_lambda_events::apigw::ApiGatewayRequestAuthorizer;
use serde_json::Value;
use std::collections::BTreeMap;

/// Claims tried in order for the display name (docs/identity.md).
/// The default order of claims that identify a person (docs/identity.md).
pub const DEFAULT_OWNER_CLAIMS: [&str; 7] = [
    "sub",
    "user_id",
    "uid",
    "email",
    "preferred_username",
    "username",
    "login",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityConfig {
    /// Claims tried in order for the owner id (`SNAPWAKE_OWNER_CLAIMS`).
    pub owner_claims: Vec<String>,
    /// Who is an admin by an identifier (`SNAPWAKE_ADMINS`; see [`AdminEntry`]).
    pub admins: Vec<AdminEntry>,
    /// Group names that make a caller admin (`SNAPWAKE_ADMIN_GROUPS`).
    pub admin_groups: Vec<String>,
}

impl Default for IdentityConfig {
    fn default() -> Self {
        IdentityConfig {
            owner_claims: DEFAULT_OWNER_CLAIMS.iter().map(|c| c.to_string()).collect(),
            admins: Vec::new(),
            admin_groups: Vec::new(),
        }
    }
}

impl IdentityConfig {
    /// Reads a comma list of `SNAPWAKE_ADMINS` entries against these owner claims.
    pub fn parse_admins(&self, list: &str) -> Vec<AdminEntry> {
        list.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| AdminEntry::parse(entry, &self.owner_claims))
            .collect()
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

#[cfg(test)]
mod tests {
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
