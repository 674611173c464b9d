//! The hook through which the client asks the deployment's AgentKit budget (`crate::budget`)
//! before each attempt, and tells it when AgentKit refused one as throttled. A trait object,
//! so the client knows nothing of where the budget is kept.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::types::Action;
use super::AgentKitError;
use crate::deadline::Deadline;

/// A boxed future of a [`CallBudget`] method.
pub type BudgetFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The budget has no slot for the call before the latest moment it could still be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoSlot {
    /// When a slot is next free, from now.
    pub free_in: Duration,
}

pub trait CallBudget: Send + Sync + 'static {
    /// Wait for a slot of `action`'s budget that starts no later than `latest`, and take it.
    fn reserve(
        &self,
        action: &'static str,
        latest: Deadline,
    ) -> BudgetFuture<'_, Result<(), NoSlot>>;

    /// AgentKit refused a call of `action` as throttled: every caller slows down.
    fn refused(&self, action: &'static str) -> BudgetFuture<'_, ()>;
}

/// Take a slot of `budget` for one attempt of `A`. A non-idempotent action's slot must leave a
/// whole `request_timeout` before `deadline` (an answer cut short would leave its outcome
/// unknown); with none free in time the call is refused here as throttled, nothing sent.
pub(super) async fn take_slot<A: Action>(
    budget: &dyn CallBudget,
    request_timeout: Duration,
    deadline: Deadline,
) -> Result<(), AgentKitError> {
    // The callers checked the whole timeout was left just before calling: a slot free at once
    // is always in time.
    let now = tokio::time::Instant::now();
    let latest = if A::IDEMPOTENT {
        deadline
    } else {
        let last = deadline.instant().checked_sub(request_timeout);
        Deadline::at(last.map_or(now, |last| last.max(now)))
    };
    budget
        .reserve(A::NAME, latest)
        .await
        .map_err(|NoSlot { free_in }| AgentKitError::Throttled {
            action: A::NAME,
            // Whole seconds, rounded up: a `Retry-After` of 0 would be asked again at once.
            retry_after: Some(Duration::from_secs(
                free_in.as_millis().div_ceil(1000).max(1) as u64,
            )),
        })
}
