//! Agent names: which display name an agent shows, and which names and agent ids are accepted.

use super::caller::UserSessionId;
use crate::error::{Error, Result};

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
mod tests {
    use super::*;

    fn status(err: Error) -> u16 {
        match err {
            Error::InvalidRequest { status, .. } => status,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn display_name_takes_the_first_that_exists() {
        let legacy = Some("studio2-2bd806c97f0e00af-random-QWxpY2UgT2xk");
        assert_eq!(
            display_name(Some("Rec"), Some("Meta"), legacy, Some("snap")),
            "Rec"
        );
        assert_eq!(
            display_name(Some(" "), Some("Meta"), legacy, Some("snap")),
            "Meta"
        );
        assert_eq!(display_name(None, None, legacy, Some("snap")), "Alice Old");
        assert_eq!(
            display_name(None, Some(""), Some("studio-alice-0f3c"), Some("snap")),
            "studio-alice-0f3c"
        );
        // An empty legacy name is skipped in favour of the raw id.
        assert_eq!(
            display_name(None, None, Some("studio2-2bd806c97f0e00af-r-"), None),
            "studio2-2bd806c97f0e00af-r-"
        );
        assert_eq!(display_name(None, None, None, Some("snap-1")), "snap-1");
        assert_eq!(display_name(None, None, None, None), "");
    }

    #[test]
    fn display_names_are_trimmed_and_bounded_in_characters() {
        assert_eq!(
            validate_display_name("  Data helper \n").unwrap(),
            "Data helper"
        );
        let forty_cjk = "助".repeat(40);
        assert_eq!(validate_display_name(&forty_cjk).unwrap(), forty_cjk);
        assert_eq!(
            status(validate_display_name(&"助".repeat(41)).unwrap_err()),
            422
        );
        assert_eq!(status(validate_display_name("   ").unwrap_err()), 422);
        assert_eq!(status(validate_display_name("").unwrap_err()), 422);
        assert_eq!(status(validate_display_name("a\u{7}b").unwrap_err()), 422);
        assert_eq!(status(validate_display_name("a\nb").unwrap_err()), 422);
        assert_eq!(validate_display_name("🦀 crab").unwrap(), "🦀 crab");
    }

    #[test]
    fn agent_ids_follow_the_route_pattern() {
        for ok in [
            "a",
            "studio-alice-0f3c",
            "snapshot-snap_1.2:3",
            "studio2-2bd806c97f0e00af-random-QWxpY2UgT2xk",
            &"x".repeat(200),
        ] {
            assert!(is_valid_agent_id(ok), "{ok:?}");
            assert_eq!(validate_agent_id(ok).unwrap(), ok);
        }
        for bad in ["", "a/b", "a b", "é", "a%2F", "a=b", &"x".repeat(201)] {
            assert!(!is_valid_agent_id(bad), "{bad:?}");
            assert_eq!(status(validate_agent_id(bad).unwrap_err()), 400);
        }
    }
}
