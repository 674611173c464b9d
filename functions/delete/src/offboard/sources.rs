//! Whom an offboarding event is accepted from. It deletes everything an owner has, so only
//! the configured sources may send it (the EventBridge rule matches them too); any other is
//! refused — logged, counted as `OffboardingRefused`, nothing deleted — and answered without
//! a function error, so that nobody retries it.

use serde::Serialize;

/// The answer to an offboarding event from a source not configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refused {
    pub refused: bool,
    /// The source the event named (`none` when it named none).
    pub source: String,
    pub reason: &'static str,
}

/// `Ok` when `source` is one of `allowed`; else what the refusal answers.
pub fn check(source: Option<&str>, allowed: &[String]) -> Result<(), Refused> {
    match source {
        Some(s) if allowed.iter().any(|a| a == s) => Ok(()),
        other => {
            let source: String = other
                .unwrap_or("none")
                .chars()
                .filter(|c| !c.is_control())
                .take(128)
                .collect();
            tracing::warn!(source = %source, "offboarding event refused: not from a configured source");
            snapwake::invocation::emit(
                snapwake::invocation::Metric::of("offboard").count("OffboardingRefused", 1),
            );
            Err(Refused {
                refused: true,
                source,
                reason: "not a configured offboarding source (SNAPWAKE_OFFBOARDING_SOURCES)",
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_configured_sources_pass() {
        let allowed = vec!["corp.identity".to_string()];
        assert!(check(Some("corp.identity"), &allowed).is_ok());
        let refused = check(Some("attacker.example"), &allowed).unwrap_err();
        assert_eq!(refused.source, "attacker.example");
        assert!(check(None, &allowed).is_err());
        assert!(check(Some("Corp.Identity"), &allowed).is_err());
    }
}
