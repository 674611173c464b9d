//! What the tick (or the queue's consumer) does to one agent once an occurrence is decided:
//! wake it or put it to sleep through the per-agent lock, and write what that came to on the
//! schedule item.

use std::time::Duration;

use snapwake::agentkit::AgentKit;
use snapwake::deadline::Budget;
use snapwake::domain::{
    Action, AgentKey, AgentRecord, Attempt, ScheduleRecord, Settled, ToolRegistry,
};
use snapwake::error::Error;
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
    InFlight {
        version: u64,
    },
    Retry,
    Failed,
}

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// Wake or put the agent to sleep exactly as the HTTP routes do (no wait: the holder
    /// sends its call and the next tick looks again; `wait`: the wake is waited on until
    /// Ready, as long as a request may wait), within `per_agent` beyond one AgentKit request (`None`:
    /// the store's whole deadline, for a consumer of one occurrence).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn act(
        &self,
        store: Within<'_, S>,
        action: Action,
        key: &AgentKey,
        record: AgentRecord,
        registry: &ToolRegistry,
        admitted: Admitted,
        per_agent: Option<Duration>,
        wait: bool,
    ) -> Acted {
        let home = home_of(registry, &record);
        let describe = record.description.clone();
        let by = match per_agent {
            Some(margin) => store
                .deadline()
                .min_after(self.agentkit.request_timeout() + margin),
            None => store.deadline(),
        };
        // Waiting on a wake as a person's request may at most (`SNAPWAKE_WAIT_S`): were the
        // consumer to die waiting, its holder's lease would hold the agent no longer.
        let budget = Budget::new(by, if wait { self.wake.wait } else { Duration::ZERO });
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
                };
                let agents = Agents::new(store, &self.agentkit, registry, &self.wake);
                match agents.sleep(&target, Some(record), budget).await {
                    Ok(SleepOutcome::Asleep { .. }) => Acted::Reached { woke: false },
                    Ok(SleepOutcome::Sleeping { record }) => Acted::InFlight {
                        version: record.version,
                    },
                    // Nothing to put to sleep: the agent is where the schedule wants it.
                    Err(Error::NotAwake(_)) => Acted::Reached { woke: false },
                    Err(e) => failed_or_retry(key, action, e),
                }
            }
        }
    }

    /// Write what the act came to on the schedule item. A conflict is left to the next tick
    /// (which sees the agent as it is, and decides from that).
    pub(super) async fn record_outcome(
        &self,
        store: Within<'_, S>,
        key: &AgentKey,
        mut written: ScheduleRecord,
        acted: Acted,
    ) {
        let Some(mut open) = written.open.take() else {
            return;
        };
        let expected = written.version;
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
            }
            Acted::InFlight { version } => {
                open.attempt = Attempt::InFlight;
                open.seen_version = version;
                written.open = Some(open);
            }
            Acted::Retry => {
                // The record as our attempt left it (it may have taken and given back the
                // lock): the next tick tries again only if nobody moves the agent meanwhile.
                // Unread, the version before the attempt stands, and the next tick, seeing
                // our own writes as a move, gives up rather than risk undoing someone's.
                if let Ok(Some(agent)) = store.get(key).await {
                    open.seen_version = agent.version;
                }
                open.attempt = Attempt::Retry;
                written.open = Some(open);
            }
        }
        if let Err(e) = store.put_schedule(&written, expected).await {
            tracing::info!(error = %e, "a scheduled occurrence's outcome is left to the next tick");
        }
    }
}

/// Whether a refused wake or sleep is worth trying again at the next tick (the agent was busy,
/// or AgentKit or the store could not be reached) or is final for this occurrence (the wake
/// failed: it is announced and shown; a person may try again).
fn failed_or_retry(key: &AgentKey, action: Action, e: Error) -> Acted {
    let again = matches!(
        e,
        Error::AgentBusy { .. } | Error::Deferred { .. } | Error::Store(_)
    ) || matches!(&e, Error::AgentKit(k) if k.is_retryable());
    tracing::info!(agent = %key, action = action.as_str(), error = %e, again, "scheduled action refused");
    if again {
        Acted::Retry
    } else {
        Acted::Failed
    }
}
