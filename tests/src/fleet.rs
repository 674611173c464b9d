//! What the fleet benches (`monday`, `lunch`) share: a person waking their own agent as the
//! console does while the fleet is at work, and the quantiles they report.

use std::time::{Duration, Instant};

use crate::{alices_request, answer, prefer_wait, HttpFunction};

/// Alice's wake of her agent `agent_id`, asked as the console asks (`Prefer: wait`, again
/// after a 202, 409, 429 or 503): the time to the 200. Fails after `patience`.
pub async fn wake_as_the_console<F: HttpFunction>(
    f: &F,
    agent_id: &str,
    patience: Duration,
) -> u64 {
    let started = Instant::now();
    let path = format!("/v1/agents/codex/{agent_id}/resume");
    loop {
        let (status, body) = answer(
            &f.respond(prefer_wait(alices_request("POST", &path), 20))
                .await,
        );
        match status {
            200 => return started.elapsed().as_millis() as u64,
            202 | 409 | 429 | 503 => tokio::time::sleep(Duration::from_millis(500)).await,
            other => panic!("the person's wake answered {other}: {body}"),
        }
        assert!(
            started.elapsed() < patience,
            "the person's wake never ended"
        );
    }
}

/// The `q` quantile of sorted `v` (milliseconds), in seconds; NaN for none.
pub fn quantile_s(v: &[u64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v[i] as f64 / 1000.0
}
