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

/// `run` at each fleet size `var` names (comma separated; else `default`), one after the
/// other, saying which on stderr: the rows of a bench's table.
pub async fn at_each_size<T, F, Fut>(var: &str, default: &str, what: &str, run: F) -> Vec<T>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut rows = Vec::new();
    for n in sizes(var, default) {
        eprintln!("{what} with {n} agents...");
        rows.push(run(n).await);
    }
    rows
}

/// The fleet sizes a bench runs: `var` (comma separated), else `default`.
fn sizes(var: &str, default: &str) -> Vec<usize> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{var}: sizes, comma separated"))
        })
        .collect()
}

/// `function` as deployed for a fleet: the tick hands due occurrences to a queue (here a
/// channel), which a consumer works at the event source mapping's concurrency, each message
/// within `budget`. Answers the function, shared, the queue and the consumer's task.
pub fn with_a_consumer<S, K>(
    mut function: snapwake_resume::Resume<S, K>,
    budget: Duration,
) -> (
    std::sync::Arc<snapwake_resume::Resume<S, K>>,
    snapwake::fanout::DueChannel,
    tokio::task::JoinHandle<()>,
)
where
    S: snapwake::store::AgentStore + snapwake::store::ScheduleStore + 'static,
    K: snapwake::agentkit::AgentKit + 'static,
{
    let queue = snapwake::fanout::DueChannel::new();
    function.fanout = snapwake::fanout::Fanout::Channel(queue.clone());
    let f = std::sync::Arc::new(function);
    let consumer = tokio::spawn({
        let (f, queue) = (f.clone(), queue.clone());
        async move {
            queue
                .consume(snapwake::fanout::AT_ONCE, |due| {
                    let f = f.clone();
                    async move {
                        f.due(&due, snapwake::invocation::Deadline::after(budget))
                            .await
                            .is_ok()
                    }
                })
                .await;
        }
    });
    (f, queue, consumer)
}

/// Alice's wakes of `agents`, one every 2 s from now, each asked as the console asks (see
/// [`wake_as_the_console`]): the task answering their times to the 200, in order.
pub fn people_waking<F: HttpFunction + 'static>(
    f: std::sync::Arc<F>,
    agents: Vec<String>,
    patience: Duration,
) -> tokio::task::JoinHandle<Vec<u64>> {
    tokio::spawn(async move {
        let mut running = Vec::new();
        for id in agents {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let f = f.clone();
            running.push(tokio::spawn(async move {
                wake_as_the_console(&*f, &id, patience).await
            }));
        }
        let mut times = Vec::new();
        for r in running {
            times.push(r.await.expect("a person's wake"));
        }
        times
    })
}
