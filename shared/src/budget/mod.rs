//! The deployment's AgentKit budget (docs/agentkit.md, *Rate limits*). AgentKit's limits are per
//! account, shared by every instance of every function, so each call first takes a slot, `1 / rate`
//! apart, from one budget per limit kept in the table ([`BudgetStore`]), and sleeps until it.
//!
//! - **People first.** A person's call takes a free slot of their lane, else a background slot
//!   free now, else waits for their lane; background work never takes a person's slot.
//! - **Headroom.** Calls reach AgentKit a little off their slots, so lanes use less than the limit.
//! - **Adaptive.** A 429 cuts the rate by a quarter (at most once a second, never below half),
//!   recovering over [`RECOVERY`]: gently, as a 429 does not say by how much, and AgentKit
//!   throttling a share of calls at any rate would otherwise drive the budget to its floor.
//! - **Fail open.** Calls go out when the table cannot answer, and meet AgentKit's own 429s.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::agentkit::port::limit_of;
use crate::agentkit::port::BudgetFuture;
use crate::agentkit::{CallBudget, NoSlot, RateLimits};
use crate::ambient::now_ms;
use crate::invocation::Deadline;
use crate::invocation::{self, priority, Metric, Priority};
use crate::store::{BudgetStore, Reserved, Slowdown};

/// How long a slowdown takes to climb back to the whole rate.
pub const RECOVERY: Duration = Duration::from_secs(30);
const SLOWEST_PERMILLE: u32 = 500;
const SLOWED_PERMILLE: u32 = 750;
/// Many calls refused in one burst slow the budget down once.
const SLOWDOWN_GAP_MS: u64 = 1000;
/// The longest one budget write may take before the call goes out without it.
const STORE_WAIT: Duration = Duration::from_secs(2);
/// The same for a person's call: a table that slow (fifty times its usual answer) is not worth
/// a person's seconds; the fleet's calls, in the other lane, keep being paced.
const PEOPLE_STORE_WAIT: Duration = Duration::from_millis(500);
/// A call this late for its slot has lost its spacing: about two slots of the usual headroom.
const LATE_SLOT_MS: u64 = 100;

/// The budget's settings (`SNAPWAKE_AGENTKIT_LIMITS`, docs/agentkit.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetSettings {
    /// AgentKit's limits as assumed; a limit off is not budgeted.
    pub limits: RateLimits,
    /// The people's lane's share of each limit.
    pub people_share_permille: u32,
    /// The share of each limit the two lanes use together.
    pub headroom_permille: u32,
}

impl Default for BudgetSettings {
    fn default() -> Self {
        BudgetSettings {
            limits: RateLimits::agentkit(),
            people_share_permille: 200,
            headroom_permille: 900,
        }
    }
}

/// A limit's two lanes, in whole slots a second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lanes {
    pub people: u32,
    pub background: u32,
}

impl BudgetSettings {
    /// The lanes of `action`'s limit (`None`: not limited); one too small to split is background.
    pub fn lanes(&self, action: &str) -> Option<Lanes> {
        let limit = self.limits.per_second(action)?;
        let total = (limit * self.headroom_permille / 1000).max(1);
        let people = if total >= 2 {
            ((total * self.people_share_permille + 500) / 1000).clamp(1, total - 1)
        } else {
            0
        };
        Some(Lanes {
            people,
            background: total - people,
        })
    }
}

/// The budget of one deployment over the table `store`.
pub struct AgentKitBudget<S> {
    store: S,
    settings: BudgetSettings,
    /// The slowdown each bucket carried when last seen, so the next slot is spaced by it.
    slowdowns: Mutex<HashMap<String, Slowdown>>,
}

impl<S: BudgetStore> AgentKitBudget<S> {
    pub fn new(store: S, settings: BudgetSettings) -> Self {
        AgentKitBudget {
            store,
            settings,
            slowdowns: Mutex::new(HashMap::new()),
        }
    }

    fn bucket(action: &str, lane: Priority) -> String {
        let lane = match lane {
            Priority::People => "people",
            Priority::Background => "background",
        };
        format!("{}#{lane}", limit_of(action))
    }

    fn slowdowns(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slowdown>> {
        self.slowdowns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The slot spacing of a lane of `per_second`, slowed down as last seen.
    fn interval_ms(&self, bucket: &str, per_second: u32, now: u64) -> u64 {
        let factor = factor_at(self.slowdowns().get(bucket).copied(), now) as u64;
        1_000_000u64.div_ceil(per_second as u64 * factor.max(1))
    }

    /// One try of one lane; `None` when the table could not answer (fail open).
    async fn try_lane(
        &self,
        action: &str,
        lane: Priority,
        per_second: u32,
        latest_ms: u64,
    ) -> Option<Reserved> {
        let bucket = Self::bucket(action, lane);
        let now = now_ms();
        let interval = self.interval_ms(&bucket, per_second, now);
        let asked = self
            .store
            .reserve(&bucket, now, interval, latest_ms.max(now));
        // Whose call it is, whichever lane it tries.
        let wait = match priority() {
            Priority::People => PEOPLE_STORE_WAIT,
            Priority::Background => STORE_WAIT,
        };
        match tokio::time::timeout(wait, asked).await {
            Ok(Ok(reserved)) => {
                if let Some(s) = reserved.slowdown() {
                    self.slowdowns().insert(bucket, s);
                }
                Some(reserved)
            }
            Ok(Err(e)) => {
                tracing::warn!(action, error = %e, "the AgentKit budget could not be read; the call goes out");
                invocation::emit(Metric::of("budget").count("BudgetUnavailable", 1));
                None
            }
            Err(_) => {
                tracing::warn!(
                    action,
                    "the AgentKit budget did not answer in time; the call goes out"
                );
                invocation::emit(Metric::of("budget").count("BudgetUnavailable", 1));
                None
            }
        }
    }

    /// Take a slot of `action` no later than `latest`: what [`CallBudget::reserve`] does.
    pub async fn take(&self, action: &'static str, latest: Deadline) -> Result<(), NoSlot> {
        let Some(lanes) = self.settings.lanes(action) else {
            return Ok(());
        };
        let latest_ms = latest.epoch_ms();
        let tries: &[(Priority, bool)] = match priority() {
            Priority::People if lanes.people > 0 => &[
                (Priority::People, true),
                (Priority::Background, true),
                (Priority::People, false),
            ],
            _ => &[(Priority::Background, false)],
        };
        let mut free_at_ms = None;
        for &(lane, only_now) in tries {
            let per_second = match lane {
                Priority::People => lanes.people,
                Priority::Background => lanes.background,
            };
            let until = if only_now { now_ms() } else { latest_ms };
            match self.try_lane(action, lane, per_second, until).await {
                None => return Ok(()),
                Some(Reserved::At { at_ms, .. }) => {
                    let wait = at_ms.saturating_sub(now_ms());
                    if wait > 0 {
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                    }
                    let late_ms = now_ms().saturating_sub(at_ms);
                    if late_ms > LATE_SLOT_MS {
                        // Counted, not refused: the slot is spent and someone is waiting.
                        tracing::warn!(
                            action,
                            late_ms,
                            "the AgentKit budget's slot was missed; the call goes out late"
                        );
                        invocation::emit(Metric::of("budget").count("BudgetLateSlots", 1));
                    }
                    return Ok(());
                }
                Some(Reserved::Full { free_at_ms: at, .. }) => free_at_ms = Some(at),
            }
        }
        tracing::debug!(
            action,
            latest_in_ms = latest_ms.saturating_sub(now_ms()),
            free_in_ms = free_at_ms.unwrap_or_default().saturating_sub(now_ms()),
            "no AgentKit budget slot in time"
        );
        invocation::emit(
            Metric::of("budget")
                .dimension("Action", action)
                .rolled_up_by(&["Component"])
                .count("BudgetRefusals", 1),
        );
        Err(NoSlot {
            free_in: Duration::from_millis(free_at_ms.unwrap_or_default().saturating_sub(now_ms())),
        })
    }

    /// AgentKit refused `action` as throttled: slow both lanes down from where they stand.
    pub async fn slow_down(&self, action: &'static str) {
        if self.settings.lanes(action).is_none() {
            return;
        }
        let now = now_ms();
        for lane in [Priority::People, Priority::Background] {
            let bucket = Self::bucket(action, lane);
            let current = factor_at(self.slowdowns().get(&bucket).copied(), now);
            let slowdown = Slowdown {
                factor_permille: slowed(current),
                since_ms: now,
            };
            let written = self.store.slow_down(&bucket, slowdown, SLOWDOWN_GAP_MS);
            match tokio::time::timeout(STORE_WAIT, written).await {
                Ok(Ok(())) => {
                    self.slowdowns().insert(bucket, slowdown);
                }
                _ => tracing::warn!(action, "a slowdown of the AgentKit budget was not written"),
            }
        }
    }
}

/// What a lane of `per_second` lets out at its slowest: what to plan a burst by.
pub fn at_slowest(per_second: u32) -> u32 {
    per_second * SLOWEST_PERMILLE / 1000
}

/// The rate factor (permille) after one more slowdown from `current`.
pub fn slowed(current: u32) -> u32 {
    (current * SLOWED_PERMILLE / 1000).max(SLOWEST_PERMILLE)
}

/// The rate factor (permille) a slowdown leaves at `now_ms`, climbing back over [`RECOVERY`].
pub fn factor_at(slowdown: Option<Slowdown>, now_ms: u64) -> u32 {
    let Some(s) = slowdown else {
        return 1000;
    };
    let recovery = RECOVERY.as_millis() as u64;
    let elapsed = now_ms.saturating_sub(s.since_ms).min(recovery);
    let low = s.factor_permille.min(1000) as u64;
    (low + (1000 - low) * elapsed / recovery) as u32
}

impl<S: BudgetStore + 'static> CallBudget for AgentKitBudget<S> {
    fn reserve(
        &self,
        action: &'static str,
        latest: Deadline,
    ) -> BudgetFuture<'_, Result<(), NoSlot>> {
        Box::pin(self.take(action, latest))
    }

    fn refused(&self, action: &'static str) -> BudgetFuture<'_, ()> {
        Box::pin(self.slow_down(action))
    }
}

#[cfg(test)]
mod tests;
