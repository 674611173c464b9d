//! Why the last wake failed, as the agent record keeps it (`CODE: reason`, the reason being the
//! operator's full story) and as views show it: the code and snapwake's own words, never the
//! reason, since AgentKit's text can carry request details (docs/security.md, "Provider text").

/// The code of a wake whose resumed session ended before it was ready.
pub const SESSION_ENDED: &str = "SESSION_ENDED";

/// The code of a wake whose session stayed starting past the readiness timeout.
pub const SESSION_STUCK: &str = "SESSION_STUCK";

/// Kept on a `waking` record waiting for a snapshot AgentKit is still making; not a failure.
pub const SNAPSHOT_IN_PROGRESS: &str = "SNAPSHOT_IN_PROGRESS";

/// AgentKit ended the session at expiry without saving it; recorded by the sweep or refresh.
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

pub fn recorded_code(recorded: &str) -> Option<&str> {
    recorded
        .split_once(':')
        .map(|(code, _)| code.trim())
        .filter(|c| !c.is_empty())
}

/// How long a failed wake's (or ended sleep's) outcome answers whoever asks: callers come back
/// after `Retry-After` (at most 2 s), and a storm of them must not each start a new attempt.
pub const OUTCOME_KEPT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether a recorded failure is how a wake itself ended (the answer to callers who come back),
/// rather than a refusal to try (throttling, table or configuration away) that a retry retries.
pub fn is_definite(recorded: &str) -> bool {
    !matches!(
        recorded_code(recorded),
        Some("PROVIDER_THROTTLED" | "STORE_UNAVAILABLE" | "NOT_CONFIGURED" | "INTERNAL")
    )
}

/// The code and words a view shows; unknown codes and records without one as [`WAKE_FAILED`].
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
