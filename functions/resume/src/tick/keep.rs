//! A scheduled day longer than a session (docs/schedules.md, "A day longer than a session"):
//! AgentKit ends a session at most 8 h after it began (or its last keepalive), and a day from
//! 08:30 to 19:00 is 10.5 h. Once a day's wake has reached its state, the schedule item says
//! when the ticks next look at the session (`keep_ms`); each look either finds the session
//! lasting past the day's sleep (nothing more to do), or far enough from its end to look again
//! later, or close to it: then it is kept alive (SetSessionTtl, exactly as the keepalive route
//! does) until a little past the sleep, as far as AgentKit allows, and looked at again then.
//!
//! The owner's word wins: an agent that is no longer awake (put to sleep by its owner, deleted,
//! being changed) is not kept, and its day is over for the ticks. A keep that AgentKit or the
//! table refuses is tried again at the next tick; the day has half an hour of slack.

use std::time::Duration;

use snapwake::agentkit::AgentKit;
use snapwake::ambient::{epoch_ms, now_ms};
use snapwake::domain::{Action, ScheduleRecord, ToolRegistry, WakeState};
use snapwake::error::Error;
use snapwake::locate::home_of;
use snapwake::offboarding::admit;
use snapwake::store::update::{update, Attempt, Step, Updated};
use snapwake::store::{AgentStore, ScheduleStore, StoreError, Within};

use super::Handled;
use crate::Resume;

/// A session is kept alive once less than this is left of it: time for a few ticks' tries
/// should AgentKit not answer.
pub const KEEP_AHEAD_MS: u64 = 30 * 60_000;
/// How long past the day's sleep the session is kept: the sleep takes its snapshot of a live
/// session, and may be carried a few minutes.
pub const PAST_THE_SLEEP_MS: u64 = 15 * 60_000;

impl<S: AgentStore + ScheduleStore, K: AgentKit> Resume<S, K> {
    /// Look at `schedule`'s day once: keep the session if it is time, and write when to look
    /// next (none: the day needs nothing more).
    pub(super) async fn keep_day(
        &self,
        store: Within<'_, S>,
        mut schedule: ScheduleRecord,
        registry: &ToolRegistry,
    ) -> Result<Handled, Error> {
        let Some(key) = schedule.key.clone() else {
            return Ok(Handled::Idle);
        };
        let now = now_ms();
        let agent = store.get(&key).await?;
        let wanted = schedule.next_sleep_ms.map(|s| s + PAST_THE_SLEEP_MS);
        let awake = agent.as_ref().filter(|a| {
            a.state == WakeState::Awake && a.session_id.is_some() && !self.wake.lock.is_held(a, now)
        });
        let next = match (awake, wanted) {
            (Some(agent), Some(wanted)) => {
                let expires = agent
                    .session_expire_at
                    .as_deref()
                    .and_then(epoch_ms)
                    .unwrap_or(0);
                if expires >= wanted {
                    None
                } else if expires > now + KEEP_AHEAD_MS {
                    Some(expires - KEEP_AHEAD_MS)
                } else {
                    self.keep_until(store, registry, agent.clone(), wanted, now)
                        .await
                }
            }
            // Not awake any more (or nothing to keep it for): the day is over for the ticks.
            _ => None,
        };
        tracing::info!(
            agent = %key,
            awake = awake.is_some(),
            next = next.map(snapwake::ambient::format_ms),
            "a scheduled day's session looked at"
        );
        schedule.keep_ms = next;
        if let Err(e) = store.put_schedule(&schedule, schedule.version).await {
            tracing::info!(agent = %key, error = %e, "a scheduled day's keep is left to the next tick");
        }
        Ok(Handled::Settled { ready: None })
    }

    /// A person is about to keep `key`'s session alive until `expires` (epoch ms): if that is
    /// inside a scheduled day (its wake reached, its sleep still ahead) and before the day's
    /// end, the day is looked at in time to keep it on. A keepalive sets the session's end from
    /// now, so a person's short one can end a day the ticks had already kept to its sleep, and
    /// no look was due any more (the simulated deployment found a 1-hour keepalive at 16:02
    /// ending an 08:30–19:00 day at 17:02). A write that loses to another (a tick's) is read
    /// and tried again. `Err`: the look could not be moved, and the keepalive is not to be
    /// sent (it answers 503, retryable): the long run found the re-arm's write failing after
    /// the keepalive had shortened the session, and the day ended at the keepalive's end.
    pub(crate) async fn day_kept_until(
        &self,
        store: Within<'_, S>,
        key: &snapwake::domain::AgentKey,
        expires: u64,
    ) -> Result<(), StoreError> {
        let updated = update(
            3,
            || store.get_schedule(key),
            |schedule: Option<ScheduleRecord>| {
                let Some(mut schedule) = schedule else {
                    return Step::Stop(());
                };
                let Some(sleep) = schedule.next_sleep_ms else {
                    return Step::Stop(());
                };
                let in_day = schedule
                    .last
                    .as_ref()
                    .is_some_and(|l| l.action == Action::Wake && l.outcome == "reached");
                let look = expires.saturating_sub(KEEP_AHEAD_MS).max(now_ms());
                let looked_at_by_then = schedule.keep_ms.is_some_and(|keep| keep <= look);
                if !in_day || expires >= sleep + PAST_THE_SLEEP_MS || looked_at_by_then {
                    return Step::Stop(());
                }
                schedule.keep_ms = Some(look);
                Step::Write(schedule)
            },
            |schedule: ScheduleRecord| async move {
                match store.put_schedule(&schedule, schedule.version).await {
                    Ok(written) => Ok(Attempt::Written(written)),
                    Err(StoreError::ScheduleConflict { .. }) => Ok(Attempt::Lost(None)),
                    Err(e) => Err(e),
                }
            },
        )
        .await?;
        match updated {
            Updated::KeptChanging => Err(StoreError::Unavailable(
                "a scheduled day's next look kept changing".into(),
            )),
            Updated::Written(_) | Updated::Stopped(()) => Ok(()),
        }
    }

    /// Keep `agent`'s session alive until `wanted`, as far as AgentKit allows: when to look
    /// again (`None`: it lasts until then; a failure looks again at the next tick).
    async fn keep_until(
        &self,
        store: Within<'_, S>,
        registry: &ToolRegistry,
        agent: snapwake::domain::AgentRecord,
        wanted: u64,
        now: u64,
    ) -> Option<u64> {
        let key = agent.key.clone();
        // An owner being offboarded keeps nothing: the offboarding ends it.
        match admit(&store, &key).await {
            Ok(_) => {}
            Err(Error::AgentGone) => return None,
            Err(e) => {
                tracing::info!(agent = %key, error = %e, "a scheduled day's keep could not ask; the next tick tries again");
                return Some(now);
            }
        }
        let ttl_s = Duration::from_millis(wanted.saturating_sub(now))
            .min(self.wake.max_ttl)
            .max(snapwake::wake::MIN_TTL)
            .as_secs();
        let home = home_of(registry, &agent);
        let deadline = store.deadline();
        let kept = self
            .extend(
                store,
                registry,
                &key,
                Some(agent),
                home.as_ref(),
                ttl_s,
                deadline,
            )
            .await;
        match kept {
            Ok(kept) => {
                let expires = kept
                    .session
                    .expire_at
                    .as_deref()
                    .and_then(epoch_ms)
                    .unwrap_or(0);
                tracing::info!(agent = %key, ttl_s, "kept a scheduled day's session alive");
                (expires < wanted).then(|| expires.saturating_sub(KEEP_AHEAD_MS).max(now + 60_000))
            }
            // The session ended: nothing to keep (the next wake occurrence wakes it again).
            Err(Error::NotAwake(why)) => {
                tracing::info!(agent = %key, %why, "a scheduled day's session ended before it was kept");
                None
            }
            Err(e) => {
                tracing::info!(agent = %key, error = %e, "a scheduled day's keep failed; the next tick tries again");
                Some(now)
            }
        }
    }
}
