//! AgentKit wrappers that shape timing: random latency, and a gate that pauses one action
//! so a test can interleave callers at an exact step.

use std::time::Duration;

/// AgentKit in front of another that waits a random 0..`max_ms` ms before each call, so
/// racing callers interleave differently every round.
pub struct Jitter<K> {
    pub inner: K,
    pub max_ms: u64,
}

impl<K: snapwake::agentkit::AgentKit> snapwake::agentkit::AgentKit for Jitter<K> {
    async fn call<A: snapwake::agentkit::types::Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: snapwake::deadline::Deadline,
    ) -> Result<A::Output, snapwake::agentkit::AgentKitError> {
        let pause = u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * self.max_ms / 256;
        tokio::time::sleep(Duration::from_millis(pause)).await;
        self.inner.call(region, request, deadline).await
    }

    fn regions(&self) -> &[String] {
        self.inner.regions()
    }

    fn request_timeout(&self) -> std::time::Duration {
        self.inner.request_timeout()
    }
}

/// AgentKit that, the first time `action` answers, pauses the caller until released: a holder
/// caught at a chosen step, so a racing operation meets it there every time.
pub struct Gate<K> {
    pub inner: K,
    pub action: &'static str,
    pub armed: std::sync::atomic::AtomicBool,
    /// Notified when the caller is paused.
    pub reached: tokio::sync::Notify,
    /// Notify to let it go on.
    pub release: tokio::sync::Notify,
}

impl<K> Gate<K> {
    /// Pause after AgentKit answered `action` (it acted).
    pub fn after(inner: K, action: &'static str) -> Self {
        Gate {
            inner,
            action,
            armed: std::sync::atomic::AtomicBool::new(true),
            reached: tokio::sync::Notify::new(),
            release: tokio::sync::Notify::new(),
        }
    }

    /// Wait (at most 10 s) until a caller is paused at the gate.
    pub async fn reached(&self) {
        tokio::time::timeout(Duration::from_secs(10), self.reached.notified())
            .await
            .unwrap_or_else(|_| panic!("nobody reached the gate at {}", self.action));
    }
}

impl<K: snapwake::agentkit::AgentKit> snapwake::agentkit::AgentKit for Gate<K> {
    async fn call<A: snapwake::agentkit::types::Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: snapwake::deadline::Deadline,
    ) -> Result<A::Output, snapwake::agentkit::AgentKitError> {
        let out = self.inner.call(region, request, deadline).await;
        if A::NAME == self.action && self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.reached.notify_one();
            self.release.notified().await;
        }
        out
    }

    fn regions(&self) -> &[String] {
        self.inner.regions()
    }

    fn request_timeout(&self) -> std::time::Duration {
        self.inner.request_timeout()
    }
}
