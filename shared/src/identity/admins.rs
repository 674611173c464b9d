//! Who is an admin: the `SNAPWAKE_ADMINS` entries and how a caller's claims match them
//! (docs/identity.md, "Admins"; the threats in docs/security.md).
//!
//! An entry names its claim (`sub:8f3c…`, `email:boss@corp.com`); a bare value matches only the
//! owner claim. One claim only: where people choose a username, someone signing up as
//! `boss@corp.com` must not become the admin whose *email* that is. Values compare ignoring
//! ASCII case only: full Unicode folding would let an attacker pick an identifier that folds
//! onto an admin's (the Kelvin sign `K` lower-cases to `k`). `email` counts only with
//! `email_verified: true`: many providers let a person type any address and verify it later.

use super::claims::Claims;

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
