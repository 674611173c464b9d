//! How long to wait before asking again: the answer's `Retry-After` when it has one (API
//! Gateway's own 429 and 503 usually do not), else exponential back-off with jitter, so many
//! clients throttled together do not come back together.

use std::time::Duration;

use reqwest::header::HeaderMap;

/// The longest any answer may make the CLI wait at once; a longer `Retry-After` is cut to it.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// The back-off before retry `n` (1 for the first): 0.5 s doubling, at most 8 s, with "equal
/// jitter" (half fixed, half random) so it never collapses to nothing.
pub fn backoff(n: u32) -> Duration {
    let ms = 500u64
        .saturating_mul(1 << n.saturating_sub(1).min(4))
        .min(8_000);
    Duration::from_millis(ms / 2 + fastrand::u64(0..=ms / 2))
}

/// `Retry-After` as delta-seconds or an HTTP-date (RFC 9110 §10.2.3), at most [`MAX_WAIT`].
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    let wait = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => {
            let at =
                time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc2822)
                    .ok()?;
            let left = at - time::OffsetDateTime::now_utc();
            Duration::try_from(left).unwrap_or(Duration::ZERO)
        }
    };
    Some(wait.min(MAX_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn with(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_str(value).expect("header"));
        h
    }

    #[test]
    fn backoff_doubles_within_its_bounds() {
        for n in 1..=8 {
            let cap = 500u64 * (1 << (n - 1).min(4));
            let cap = cap.min(8_000);
            for _ in 0..50 {
                let ms = backoff(n).as_millis() as u64;
                assert!(ms >= cap / 2 && ms <= cap, "retry {n}: {ms} ms");
            }
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_dates_and_is_bounded() {
        assert_eq!(retry_after(&with("3")), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(&with("0")), Some(Duration::ZERO));
        assert_eq!(retry_after(&with("86400")), Some(MAX_WAIT));
        // A date in the past: ask again now.
        assert_eq!(
            retry_after(&with("Sun, 06 Nov 1994 08:49:37 GMT")),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&with("soon")), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }
}
