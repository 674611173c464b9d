//! RFC 7240 `Prefer: wait=<seconds>`: how long a client would like a resume or a sleep to hold
//! its request (docs/wake-protocol.md, "Short requests"), and the `Preference-Applied` header
//! that says what it got.
//!
//! A preference is a hint, not a command (RFC 7240 §2): one that cannot be read (`wait=soon`,
//! `wait=-1`) is ignored, as the RFC asks, and the request is served as if it had none (a
//! short request, no `Preference-Applied`). The header may list several preferences
//! (`respond-async, wait=10`) over several lines; names are case-insensitive, a value may be
//! quoted, and the first `wait` counts.

use std::time::Duration;

use http::HeaderMap;

/// The most a client may ask for: API Gateway cuts HTTP requests at 30 s.
pub const MAX_WAIT: Duration = Duration::from_secs(20);

/// The `wait` preference of `headers`, at most [`MAX_WAIT`] (`None`: none, or unreadable).
pub fn wait(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|line| line.split(','))
        .find_map(|preference| {
            // Parameters after `;` belong to the preference, not to its value.
            let token = preference.split(';').next()?.trim();
            let (name, value) = token.split_once('=')?;
            if !name.trim().eq_ignore_ascii_case("wait") {
                return None;
            }
            let value = value.trim().trim_matches('"');
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Digits only: a number too large for u64 is simply "as long as allowed".
            let seconds = value.parse::<u64>().unwrap_or(u64::MAX);
            Some(Duration::from_secs(seconds).min(MAX_WAIT))
        })
}

/// The `Preference-Applied` value for a wait of `applied` (whole seconds, rounded down).
pub fn applied(applied: Duration) -> String {
    format!("wait={}", applied.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("prefer", v.parse().unwrap());
        }
        h
    }

    #[test]
    fn reads_the_wait_preference_as_rfc_7240_writes_it() {
        let s = |n| Some(Duration::from_secs(n));
        assert_eq!(wait(&headers(&["wait=10"])), s(10));
        assert_eq!(wait(&headers(&["WAIT = 5"])), s(5));
        assert_eq!(wait(&headers(&["wait=\"7\""])), s(7));
        assert_eq!(wait(&headers(&["respond-async, wait=3"])), s(3));
        assert_eq!(wait(&headers(&["handling=lenient", "wait=4; x=y"])), s(4));
        assert_eq!(wait(&headers(&["wait=0"])), s(0));
        // The first wait counts.
        assert_eq!(wait(&headers(&["wait=2, wait=9"])), s(2));
    }

    #[test]
    fn caps_the_wait_at_twenty_seconds() {
        assert_eq!(wait(&headers(&["wait=21"])), Some(MAX_WAIT));
        assert_eq!(
            wait(&headers(&["wait=99999999999999999999999"])),
            Some(MAX_WAIT)
        );
    }

    #[test]
    fn ignores_what_it_cannot_read() {
        for bad in [
            "wait=soon",
            "wait=-1",
            "wait=",
            "wait=1.5",
            "respond-async",
            "waiting=3",
        ] {
            assert_eq!(wait(&headers(&[bad])), None, "{bad}");
        }
        assert_eq!(wait(&HeaderMap::new()), None);
    }

    #[test]
    fn says_what_was_applied_in_whole_seconds() {
        assert_eq!(applied(Duration::from_millis(20_900)), "wait=20");
        assert_eq!(applied(Duration::ZERO), "wait=0");
    }
}
