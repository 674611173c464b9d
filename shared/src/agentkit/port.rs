//! The AgentKit port: what the wake protocol and the handlers need of AgentKit, so tests can
//! put a wrapper in front of the real client (to stop a holder dead at a chosen step, say)
//! without any hook in production code.

use std::future::Future;

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
}

impl AgentKit for AgentKitClient {
    fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> impl Future<Output = Result<A::Output, AgentKitError>> + Send {
        AgentKitClient::call(self, region, request, deadline)
    }

    fn regions(&self) -> &[String] {
        AgentKitClient::regions(self)
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
}
