//! Why the last wake failed, as the agent record keeps it and as views show it.
//!
//! The record keeps `CODE: reason`: the code says what kind of failure it was, the reason is
//! the full story for an operator reading the table (it may quote AgentKit). A view shows the
//! code and snapwake's own words for it, never the reason: an AgentKit error's text can carry
//! parse errors, request details or worse (docs/security.md, "Provider text"). A record written
//! before codes existed shows the generic words.

/// The code of a wake whose resumed session ended before it was ready.
pub const SESSION_ENDED: &str = "SESSION_ENDED";

/// The code of a wake whose session stayed starting past the readiness timeout.
pub const SESSION_STUCK: &str = "SESSION_STUCK";

/// The code of a wake waiting for a snapshot AgentKit is still making (kept on a `waking`
/// record while it waits; not a failure).
pub const SNAPSHOT_IN_PROGRESS: &str = "SNAPSHOT_IN_PROGRESS";

/// The code of an agent whose session AgentKit ended at its expiry without saving it (its
/// expiry snapshot failed): recorded by the sweep or the refresh, not by a wake.
pub const SESSION_EXPIRED: &str = "SESSION_EXPIRED";

/// The code shown for a failure recorded without one.
pub const WAKE_FAILED: &str = "WAKE_FAILED";

/// Each code a failed wake may record, and the words a view shows for it.
const WORDS: [(&str, &str); 10] = [
    (
        SESSION_STUCK,
        "the sandbox did not become ready in time; wake it again to end it and start afresh from the snapshot, which is intact",
    ),
    (
        "SNAPSHOT_STUCK",
        "AgentKit is taking unusually long to save the last session; wake it again later, or wake an older snapshot",
    ),
    (
        "PROVIDER_ERROR",
        "AgentKit could not start the sandbox; the snapshot is intact, wake it again",
    ),
    (
        "PROVIDER_THROTTLED",
        "AgentKit was too busy to start the sandbox; the snapshot is intact, wake it again in a moment",
    ),
    (
        SESSION_ENDED,
        "the sandbox stopped before it was ready; the snapshot is intact, wake it again",
    ),
    (
        SESSION_EXPIRED,
        "the sandbox reached the end of its session and AgentKit could not save it; wake an earlier snapshot, if it has one",
    ),
    (
        "NOT_CONFIGURED",
        "snapwake cannot reach AgentKit as configured; ask an administrator",
    ),
    (
        "STORE_UNAVAILABLE",
        "snapwake could not finish the wake; the snapshot is intact, wake it again",
    ),
    (
        "INTERNAL",
        "snapwake could not finish the wake; the snapshot is intact, wake it again",
    ),
    (
        WAKE_FAILED,
        "the last wake failed; the snapshot is intact, wake it again",
    ),
];

/// The text a record keeps for a failure: `code` first, so views can read it back.
pub fn recorded_failure(code: &str, reason: &str) -> String {
    format!("{code}: {reason}")
}

/// The code a record keeps first (`CODE: reason`), if any.
pub fn recorded_code(recorded: &str) -> Option<&str> {
    recorded
        .split_once(':')
        .map(|(code, _)| code.trim())
        .filter(|c| !c.is_empty())
}

/// How long after a wake failed (or a sleep ended) its outcome is the answer to whoever asks,
/// rather than a new attempt: callers of short requests come back after `Retry-After` (at most
/// 2 s) to learn how the operation they asked for ended, and a storm of them must not start one
/// new attempt each (docs/wake-protocol.md, "Short requests"). A failed wake's or sleep's
/// problem says `Retry-After` this long: a retry after it is a new attempt.
pub const OUTCOME_KEPT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether a recorded failure is how a wake itself ended (the sandbox did not start, its
/// status is one nobody documented, its snapshot is stuck) rather than a refusal to try
/// (AgentKit throttling, the table or the configuration away), which a retry after its
/// `Retry-After` simply tries again. Only the former is the answer to the callers who come
/// back to learn how the wake they asked for ended (docs/wake-protocol.md, "Short requests").
pub fn is_definite(recorded: &str) -> bool {
    !matches!(
        recorded_code(recorded),
        Some("PROVIDER_THROTTLED" | "STORE_UNAVAILABLE" | "NOT_CONFIGURED" | "INTERNAL")
    )
}

/// The code and words a view shows for what a record keeps. Unknown codes, and records from
/// before codes, show as [`WAKE_FAILED`].
pub fn shown_failure(recorded: &str) -> (&'static str, &'static str) {
    let code = recorded.split_once(':').map_or("", |(code, _)| code.trim());
    WORDS
        .iter()
        .find(|(known, _)| *known == code)
        .or_else(|| WORDS.iter().find(|(known, _)| *known == WAKE_FAILED))
        .copied()
        .unwrap_or((WAKE_FAILED, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_shows_the_code_and_our_words_only() {
        let recorded = recorded_failure(
            "PROVIDER_ERROR",
            "AgentKit ResumeSessionFromSnapshot: invalid response: expected value at line 1",
        );
        let (code, words) = shown_failure(&recorded);
        assert_eq!(code, "PROVIDER_ERROR");
        assert!(!words.contains("line 1") && !words.contains("AgentKit Resume"));
        // A record from before codes, quoting the provider: generic words.
        let (code, words) = shown_failure("AgentKit CreateSession may have failed: secret=x");
        assert_eq!(code, WAKE_FAILED);
        assert!(!words.contains("secret"));
        assert_eq!(shown_failure("").0, WAKE_FAILED);
    }

    #[test]
    fn a_refusal_to_try_is_not_the_outcome_of_a_wake() {
        assert!(is_definite(&recorded_failure(SESSION_ENDED, "gone")));
        assert!(is_definite(&recorded_failure(SESSION_STUCK, "slow")));
        assert!(is_definite("an old record without a code"));
        assert!(!is_definite(&recorded_failure("PROVIDER_THROTTLED", "429")));
        assert!(!is_definite(&recorded_failure(
            "STORE_UNAVAILABLE",
            "timeout"
        )));
    }
}
