//! Relaying the stream's changes to the bus in order, stopping at the first event not published
//! so delivery resumes there (the announce function reports it as the batch's first failure;
//! [`follow`] retries it first) and an agent's events keep its versions' order. A call holds one
//! event per agent, as entries fail one by one. A call starts only with a whole
//! [`PUBLISH_BUDGET`] left: a slow bus ends with a partial batch, not a timeout replaying it all.

use std::collections::HashSet;
use std::time::Duration;

use super::derive::derive;
use super::sink::EventSink;
use crate::domain::{AgentKey, StateEvent};
use crate::invocation::Deadline;
use crate::invocation::{self, Metric};
use crate::store::{ChangeSource, RecordChange, UsageStore};

/// The longest one call's publishing may take (all its tries).
pub const PUBLISH_BUDGET: Duration = Duration::from_millis(1500);
/// Events one call publishes at most: EventBridge's `PutEvents` limit.
pub const EVENTS_PER_CALL: usize = 10;
const ATTEMPTS: u32 = 3;

/// What publishing a batch of changes did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Relayed {
    pub published: usize,
    /// The `sequence` of the first change not handled (failed, or not tried by the deadline).
    pub failed_at: Option<String>,
}

/// Publish the events of `changes` in order, until a failure or `deadline`.
pub async fn announce<E: EventSink>(
    changes: &[RecordChange],
    sink: &E,
    deadline: Deadline,
) -> Relayed {
    let mut relayed = Relayed::default();
    if !sink.enabled() {
        return relayed;
    }
    let events: Vec<(&RecordChange, StateEvent)> = changes
        .iter()
        .filter_map(|c| derive(c).map(|e| (c, e)))
        .collect();
    for call in calls(&events) {
        let (first, _) = &call[0];
        if !deadline.allows(PUBLISH_BUDGET) {
            tracing::info!(
                left = events.len() - relayed.published,
                "the deadline comes: the rest of the batch is delivered again"
            );
            relayed.failed_at = Some(first.sequence.clone());
            break;
        }
        let outcome = publish(sink, &call).await;
        relayed.published += outcome.iter().filter(|r| r.is_ok()).count();
        invocation::emit(Metric::of("events").count(
            "EventsPublished",
            outcome.iter().filter(|r| r.is_ok()).count() as u64,
        ));
        if let Some((i, Err(error))) = outcome.iter().enumerate().find(|(_, r)| r.is_err()) {
            let (change, event) = &call[i];
            tracing::warn!(
                detail_type = %event.detail_type,
                change_id = %event.detail.change_id,
                %error,
                "a state-change event was not published; delivery resumes from it"
            );
            invocation::emit(Metric::of("events").count("EventsFailed", 1));
            relayed.failed_at = Some(change.sequence.clone());
            break;
        }
    }
    relayed
}

/// One batch of the stream as its consumer handles it: each change's usage kept
/// (`crate::usage::keep`), then the events of those kept published, up to the first change
/// either could not handle, which [`Relayed::failed_at`] names.
pub async fn consume<S: UsageStore, E: EventSink>(
    changes: &[RecordChange],
    usage: &S,
    sink: &E,
    deadline: Deadline,
) -> Relayed {
    let kept = crate::usage::keep(changes, usage).await;
    let upto = match &kept.failed_at {
        Some(at) => changes.iter().take_while(|c| &c.sequence != at).count(),
        None => changes.len(),
    };
    let mut relayed = announce(&changes[..upto], sink, deadline).await;
    if relayed.failed_at.is_none() {
        relayed.failed_at = kept.failed_at;
    }
    relayed
}

/// `events` in calls: in order, at most [`EVENTS_PER_CALL`] each, one per agent.
fn calls<'e>(
    events: &'e [(&'e RecordChange, StateEvent)],
) -> Vec<Vec<(&'e RecordChange, StateEvent)>> {
    let mut calls: Vec<Vec<(&RecordChange, StateEvent)>> = Vec::new();
    let mut agents: HashSet<AgentKey> = HashSet::new();
    for (change, event) in events {
        let agent = AgentKey::new(event.detail.kind, event.detail.agent_id.clone());
        let full = calls.last().is_none_or(|c| c.len() >= EVENTS_PER_CALL);
        if full || agents.contains(&agent) {
            calls.push(Vec::new());
            agents.clear();
        }
        agents.insert(agent);
        if let Some(call) = calls.last_mut() {
            call.push((*change, event.clone()));
        }
    }
    calls
}

/// One call's events, the failed ones tried again, [`ATTEMPTS`] in all within [`PUBLISH_BUDGET`].
async fn publish<E: EventSink>(
    sink: &E,
    call: &[(&RecordChange, StateEvent)],
) -> Vec<Result<(), String>> {
    let mut outcome: Vec<Result<(), String>> = vec![Err("not tried".into()); call.len()];
    let attempts = async {
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(100 * 3u64.pow(attempt - 1))).await;
            }
            let left: Vec<usize> = (0..call.len()).filter(|i| outcome[*i].is_err()).collect();
            if left.is_empty() {
                break;
            }
            let events: Vec<StateEvent> = left.iter().map(|i| call[*i].1.clone()).collect();
            let answers = sink.publish_all(&events).await;
            for (i, answer) in left.into_iter().zip(answers) {
                outcome[i] = answer.map_err(|e| e.to_string());
            }
        }
    };
    if tokio::time::timeout(PUBLISH_BUDGET, attempts)
        .await
        .is_err()
    {
        for o in outcome.iter_mut().filter(|o| o.is_err()) {
            *o = Err("the bus did not answer in time".into());
        }
    }
    outcome
}

/// Consume `source` for good ([`consume`]: usage into `usage`, events to `sink`), polling every
/// `every`; a failed change is retried first.
pub async fn follow<C: ChangeSource, S: UsageStore, E: EventSink>(
    mut source: C,
    usage: S,
    sink: E,
    every: Duration,
) {
    let mut pending: Vec<RecordChange> = Vec::new();
    loop {
        if pending.is_empty() {
            match source.next().await {
                Ok(changes) => pending = changes,
                Err(e) => tracing::warn!(error = %e, "the change stream could not be read"),
            }
        }
        if !pending.is_empty() {
            let deadline = Deadline::after(every.max(Duration::from_secs(10)));
            match consume(&pending, &usage, &sink, deadline).await.failed_at {
                None => {
                    pending.clear();
                    continue;
                }
                Some(at) => {
                    let handled = pending.iter().take_while(|c| c.sequence != at).count();
                    pending.drain(..handled);
                }
            }
        }
        tokio::time::sleep(every).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AgentRecord, Announce, Announcement, Kind, Trigger};

    fn change(n: u64, agent: &str) -> RecordChange {
        let mut r = AgentRecord::absent(AgentKey::new(Kind::Codex, agent));
        r.version = n;
        r.announced = Some(Announcement {
            what: Announce::Awake,
            trigger: Trigger::Http,
        });
        RecordChange {
            sequence: n.to_string(),
            old: None,
            new: Some(r),
        }
    }

    #[test]
    fn calls_hold_ten_events_and_one_of_each_agent() {
        let changes: Vec<RecordChange> = (1..=25)
            .map(|n| change(n, if n == 4 { "a" } else { ["a", "b", "c"][0] }))
            .collect();
        let distinct: Vec<RecordChange> =
            (1..=25).map(|n| change(n, &format!("agent-{n}"))).collect();
        let events = |cs: &[RecordChange]| -> Vec<(RecordChange, StateEvent)> {
            cs.iter()
                .filter_map(|c| derive(c).map(|e| (c.clone(), e)))
                .collect()
        };
        let d = events(&distinct);
        let refs: Vec<(&RecordChange, StateEvent)> =
            d.iter().map(|(c, e)| (c, e.clone())).collect();
        let sizes: Vec<usize> = calls(&refs).iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![10, 10, 5]);
        // One agent's events: one a call, in order.
        let same = events(&changes);
        let refs: Vec<(&RecordChange, StateEvent)> =
            same.iter().map(|(c, e)| (c, e.clone())).collect();
        let split = calls(&refs);
        assert_eq!(split.len(), 25);
        let order: Vec<&str> = split.iter().map(|c| c[0].0.sequence.as_str()).collect();
        assert_eq!(order[..3], ["1", "2", "3"]);
    }
}
