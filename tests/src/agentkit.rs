//! AgentKit wrappers of tests: one AgentKit in front of another that runs a hook around each
//! call ([`Hooked`]), and hooks that shape timing: random latency, and a gate that pauses one
//! action so a test can interleave callers at an exact step.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use snapwake::agentkit::types::Action;
use snapwake::agentkit::{AgentKit, AgentKitError};
use snapwake::invocation::Deadline;
use tokio::sync::Notify;

/// What a test's AgentKit does around each call it passes on to the real one: pause, note or
/// stall the caller, before or after AgentKit acted.
pub trait AgentKitHook: Send + Sync + 'static {
    /// Pass `call` (`request`, action `A`, on its way to the AgentKit behind) on, doing what the
    /// test needs before and after it; answers what `call` answered.
    fn around<A: Action, C: AgentKitCall>(
        &self,
        request: &A,
        call: C,
    ) -> impl Future<Output = C::Output> + Send;
}

/// A call a hook passes on: the AgentKit behind at work on one request.
pub trait AgentKitCall: Future<Output: Send> + Send {}

impl<F: Future<Output: Send> + Send> AgentKitCall for F {}

/// AgentKit `inner` with `hook` around each of its calls. It dereferences to the hook, so a
/// test reaches the hook's notifications and notes directly.
#[derive(Clone)]
pub struct Hooked<K, H> {
    pub inner: K,
    pub hook: H,
}

impl<K: AgentKit, H: AgentKitHook> AgentKit for Hooked<K, H> {
    async fn call<A: Action + 'static>(
        &self,
        region: &str,
        request: &A,
        deadline: Deadline,
    ) -> Result<A::Output, AgentKitError> {
        let call = self.inner.call(region, request, deadline);
        self.hook.around(request, call).await
    }

    fn regions(&self) -> &[String] {
        self.inner.regions()
    }

    fn request_timeout(&self) -> Duration {
        self.inner.request_timeout()
    }
}

impl<K, H> std::ops::Deref for Hooked<K, H> {
    type Target = H;

    fn deref(&self) -> &H {
        &self.hook
    }
}

/// What a DeleteSession `request` ends: its session, and (id, status) of each of that
/// session's snapshots in the simulator of `ctl` at that moment.
pub fn ending_of<A: Action>(
    ctl: &snapwake_sim::SimControl,
    request: &A,
) -> (String, Vec<(String, String)>) {
    let sent = serde_json::to_value(request).unwrap_or_default();
    let session = sent["SessionId"].as_str().unwrap_or_default().to_string();
    let snapshots = ctl
        .snapshots()
        .into_iter()
        .filter(|s| s.session_id.as_deref() == Some(session.as_str()))
        .map(|s| {
            (
                s.snapshot_id.unwrap_or_default(),
                s.status.unwrap_or_default(),
            )
        })
        .collect();
    (session, snapshots)
}

/// A random wait of 0..`max_ms` ms before each call, so racing callers interleave differently
/// every round.
pub struct Jitter {
    pub max_ms: u64,
}

impl Jitter {
    /// `inner` behind a jitter of 0..`max_ms` ms.
    pub fn before<K>(inner: K, max_ms: u64) -> Hooked<K, Jitter> {
        Hooked {
            inner,
            hook: Jitter { max_ms },
        }
    }
}

impl AgentKitHook for Jitter {
    async fn around<A: Action, C: AgentKitCall>(&self, _: &A, call: C) -> C::Output {
        let pause = u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * self.max_ms / 256;
        tokio::time::sleep(Duration::from_millis(pause)).await;
        call.await
    }
}

/// The first time `action` answers, the caller is paused until released: a holder caught at a
/// chosen step, so a racing operation meets it there every time (never released: a holder that
/// died right after AgentKit acted).
pub struct Pause {
    pub action: &'static str,
    pub armed: AtomicBool,
    /// Notified when the caller is paused.
    pub reached: Notify,
    /// Notify to let it go on.
    pub release: Notify,
}

impl AgentKitHook for Pause {
    async fn around<A: Action, C: AgentKitCall>(&self, _: &A, call: C) -> C::Output {
        let out = call.await;
        if A::NAME == self.action && self.armed.swap(false, Ordering::SeqCst) {
            self.reached.notify_one();
            self.release.notified().await;
        }
        out
    }
}

/// AgentKit that pauses the caller the first time `action` answers (see [`Pause`]).
pub type Gate<K> = Hooked<K, Pause>;

impl<K> Gate<K> {
    /// Pause after AgentKit answered `action` (it acted).
    pub fn after(inner: K, action: &'static str) -> Self {
        Hooked {
            inner,
            hook: Pause {
                action,
                armed: AtomicBool::new(true),
                reached: Notify::new(),
                release: Notify::new(),
            },
        }
    }

    /// Wait (at most 10 s) until a caller is paused at the gate.
    pub async fn reached(&self) {
        tokio::time::timeout(Duration::from_secs(10), self.hook.reached.notified())
            .await
            .unwrap_or_else(|_| panic!("nobody reached the gate at {}", self.hook.action));
    }
}
