//! The client's hook into the deployment's AgentKit budget (`crate::budget`): a slot before
//! each attempt, a report of each throttle. A trait object: the client knows not where it lives.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::types::Action;
use super::AgentKitError;
use crate::deadline::Deadline;

pub type BudgetFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The budget has no slot for the call before the latest moment it could still be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoSlot {
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

/// Take a slot for one attempt of `A`. A non-idempotent action's must leave a whole
/// `request_timeout` before `deadline`; with none in time it is refused as throttled, unsent.
pub(super) async fn take_slot<A: Action>(
    budget: &dyn CallBudget,
    request_timeout: Duration,
    deadline: Deadline,
) -> Result<(), AgentKitError> {
    // Callers checked the whole timeout was left, so a slot free at once is always in time.
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
