//! What the tick (or the queue's consumer) does to one agent once an occurrence is decided:
//! wake it or put it to sleep through the per-agent lock, and write what that came to on the
//! schedule item.

use std::time::Duration;

use snapwake::agentkit::AgentKit;
use snapwake::domain::{
    Action, AgentKey, AgentRecord, Attempt, ScheduleRecord, Settled, ToolRegistry,
};
use snapwake::error::Error;
use snapwake::invocation::Budget;
use snapwake::locate::home_of;
use snapwake::lock::Agents;
use snapwake::offboarding::Admitted;
use snapwake::sleep::{SleepOutcome, SleepTarget};
use snapwake::store::{AgentStore, ScheduleStore, Within};
use snapwake::wake::{WakeOutcome, WakeTarget};

use crate::Resume;

/// What one act on an agent came to.
pub(super) enum Acted {
    /// Where the schedule wants it; `woke`: a Resume (this one or a concurrent one) woke it,
    /// rather than it being found awake.
    Reached {
        woke: bool,
    },
    /// Still in flight: the record's version and where it rests as the act left it.
    InFlight {
        version: u64,
        rest: u64,
    },
    /// Refused for now (busy, throttled, unreachable); `after`: when it may be asked again,
    /// when the refusal said.
    Retry {
        after: Option<Duration>,
    },
    Failed,
}

/// The longest a follow-up waits: a wake still booting is looked at again at least this often.
pub(super) const FOLLOW_UP_AT_MOST: Duration = Duration::from_secs(15);
/// The first follow-up's wait: about a sandbox's quickest boot.
pub(super) const FOLLOW_UP_AT_LEAST: Duration = Duration::from_secs(2);

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// Wake or put the agent to sleep exactly as the HTTP routes do, without waiting (the
    /// holder sends its call and the occurrence is followed up), within the store's deadline.
    /// `idle_by_ms`: an idle sleep's, taking the agent only while still idle by then.
    #[allow(clippy::too_many_arguments)] // what one act is about; read once by its two callers
    pub(super) async fn act(
        &self,
        store: Within<'_, S>,
        action: Action,
        key: &AgentKey,
        record: AgentRecord,
        registry: &ToolRegistry,
        admitted: Admitted,
        idle_by_ms: Option<u64>,
    ) -> Acted {
        let home = home_of(registry, &record);
        let describe = record.description.clone();
        let budget = Budget::new(store.deadline(), Duration::ZERO);
        let store = store.until(budget.work);
        match action {
            Action::Wake => {
                let target = WakeTarget {
                    key: key.clone(),
                    home,
                    snapshot_id: None,
                    describe,
                    admitted,
                };
                let agents = Agents::new(store, &self.agentkit, registry, &self.wake);
                match agents.wake(&target, Some(record), budget).await {
                    Ok(WakeOutcome::Awake { resumed, .. }) => Acted::Reached { woke: resumed },
                    Ok(WakeOutcome::Waking { record }) => Acted::InFlight {
                        version: record.version,
                        rest: record.rest_mark(),
                    },
                    Err(e) => failed_or_retry(key, action, e),
                }
            }
            Action::Sleep => {
                let target = SleepTarget {
                    key: key.clone(),
                    home,
                    describe,
                    admitted,
                    idle_by_ms,
                };
                let agents = Agents::new(store, &self.agentkit, registry, &self.wake);
                match agents.sleep(&target, Some(record), budget).await {
                    Ok(SleepOutcome::Asleep { .. }) => Acted::Reached { woke: false },
                    Ok(SleepOutcome::Sleeping { record }) => Acted::InFlight {
                        version: record.version,
                        rest: record.rest_mark(),
                    },
                    // Nothing to put to sleep: the agent is where the schedule wants it.
                    Err(Error::NotAwake(_)) => Acted::Reached { woke: false },
                    Err(e) => failed_or_retry(key, action, e),
                }
            }
        }
    }

    /// Write what the act came to on the schedule item, and when the occurrence is to be
    /// followed up, if it is still open (its consumer sends it again, delayed until then:
    /// docs/schedules.md, "Fan-out"). A conflict is left to the next tick (which sees the agent
    /// as it is, and decides from that).
    pub(super) async fn record_outcome(
        &self,
        store: Within<'_, S>,
        key: &AgentKey,
        mut written: ScheduleRecord,
        acted: Acted,
        time_ms: u64,
    ) -> Option<Duration> {
        let mut open = written.open.take()?;
        let expected = written.version;
        let mut wait = None;
        let mut follow_up = |w: Duration| {
            let w = w.clamp(Duration::from_secs(1), FOLLOW_UP_AT_MOST);
            wait = Some(w);
            // In the tick's time, as the tick compares it.
            Some(time_ms + w.as_millis() as u64)
        };
        match acted {
            Acted::Reached { .. } | Acted::Failed => {
                let outcome = if matches!(acted, Acted::Reached { .. }) {
                    "reached"
                } else {
                    "failed"
                };
                written.last = Some(Settled {
                    action: open.action,
                    at_ms: open.at_ms,
                    outcome: outcome.into(),
                });
                // In the tick's time, as every time on the item is.
                snapwake::schedule::keep_after(&mut written, time_ms);
            }
            Acted::InFlight { version, rest } => {
                open.attempt = Attempt::InFlight;
                open.seen_version = version;
                open.seen_rest = Some(rest);
                // Half of what it has taken so far: a quick boot is seen soon after it is
                // Ready, a slow one is not asked about every second.
                let so_far = time_ms.saturating_sub(open.started_ms.unwrap_or(time_ms));
                let wait = Duration::from_millis(so_far / 2).max(FOLLOW_UP_AT_LEAST);
                open.follow_up_ms = follow_up(wait);
                written.open = Some(open);
            }
            Acted::Retry { after } => {
                // The record as our attempt left it (it may have taken and given back the
                // lock): the next tick tries again only if nobody moves the agent meanwhile.
                // Read again if the table failed: unread, the version before the attempt
                // stands, and the next tick, seeing our own writes as a move, gives up rather
                // than risk undoing someone's (an agent left awake past its scheduled sleep,
                // the simulated deployment found: seed 1015).
                for _ in 0..3 {
                    if let Ok(read) = store.get(key).await {
                        if let Some(agent) = read {
                            open.seen_version = agent.version;
                            open.seen_rest = Some(agent.rest_mark());
                        }
                        break;
                    }
                }
                open.attempt = Attempt::Retry;
                // After what the refusal said; else a second, backing off to half of how long
                // the occurrence has been tried (at most 15 s): a refused wake is tried again
                // within its minute, and AgentKit down for half an hour is not asked every
                // second (the simulated deployment's outages found that storm).
                let tried =
                    time_ms.saturating_sub(open.started_ms.unwrap_or(open.at_ms).min(time_ms));
                let backed_off = Duration::from_millis(tried / 2).max(Duration::from_secs(1));
                open.follow_up_ms = follow_up(after.unwrap_or(backed_off));
                written.open = Some(open);
            }
        }
        match store.put_schedule(&written, expected).await {
            Ok(_) => wait,
            Err(e) => {
                tracing::info!(error = %e, "a scheduled occurrence's outcome is left to the next tick");
                None
            }
        }
    }
}

/// Whether a refused wake or sleep is worth trying again at the next tick (the agent was busy,
/// AgentKit or the store could not be reached, a sleep's snapshot was not taken: the agent is
/// still awake, and would stay so all night) or is final for this occurrence (the wake failed:
/// it is announced and shown; a person may try again).
fn failed_or_retry(key: &AgentKey, action: Action, e: Error) -> Acted {
    let again = matches!(
        e,
        Error::AgentBusy { .. } | Error::Deferred { .. } | Error::Store(_) | Error::SleepFailed(_)
    ) || matches!(&e, Error::AgentKit(k) if k.is_retryable());
    tracing::info!(agent = %key, action = action.as_str(), error = %e, again, "scheduled action refused");
    let after = match &e {
        Error::AgentBusy { retry_after_s, .. } | Error::Deferred { retry_after_s, .. } => {
            Some(Duration::from_secs(*retry_after_s))
        }
        Error::AgentKit(snapwake::agentkit::AgentKitError::Throttled { retry_after, .. }) => {
            *retry_after
        }
        _ => None,
    };
    if again {
        Acted::Retry { after }
    } else {
        Acted::Failed
    }
}
