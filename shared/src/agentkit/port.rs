//! The AgentKit port: what the wake protocol and handlers need of AgentKit, so tests can wrap
//! the real client (to stop a holder at a chosen step, say) with no hook in production code.

use std::future::Future;
use std::time::Duration;

use super::types::Action;
use super::{AgentKitClient, AgentKitError};
use crate::deadline::Deadline;

pub trait AgentKit: Send + Sync + 'static {
    /// Call `request` in `region` within `deadline` (retries included).
    fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> impl Future<Output = Result<A::Output, AgentKitError>> + Send;

    /// The configured regions, in the order they are tried.
    fn regions(&self) -> &[String];

    /// How long one attempt may take (`AGENTKIT_TIMEOUT_MS`). A non-idempotent action is never
    /// sent with less left (docs/wake-protocol.md): an answer cut short leaves its outcome unknown.
    fn request_timeout(&self) -> Duration {
        DEFAULT_REQUEST_TIMEOUT
    }
}

pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

impl AgentKit for AgentKitClient {
    fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> impl Future<Output = Result<A::Output, AgentKitError>> + Send {
        // Boxed: a large future, awaited often (debug builds would need megabytes of stack).
        Box::pin(AgentKitClient::call(self, region, request, deadline))
    }

    fn regions(&self) -> &[String] {
        AgentKitClient::regions(self)
    }

    fn request_timeout(&self) -> Duration {
        AgentKitClient::request_timeout(self)
    }
}

impl<T: AgentKit> AgentKit for std::sync::Arc<T> {
    fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> impl Future<Output = Result<A::Output, AgentKitError>> + Send {
        (**self).call(region, request, deadline)
    }

    fn regions(&self) -> &[String] {
        (**self).regions()
    }

    fn request_timeout(&self) -> Duration {
        (**self).request_timeout()
    }
}
