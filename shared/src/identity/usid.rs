//! The UserSessionId codec, byte-compatible with the reference Studio (docs/identity.md). A
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

use data_encoding::{BASE32_NOPAD, BASE64URL_NOPAD};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

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
mod tests {
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
