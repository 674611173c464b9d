//! A table whose chosen calls never answer, as a DynamoDB whose connections hang: what a
//! handler's deadline must cut short (docs/architecture.md, "Deadlines and budgets").

use std::sync::atomic::{AtomicBool, Ordering};

use snapwake::store::{Answer, Call, Layer};

/// Which calls hang.
pub type Stalls = fn(&Call<'_>) -> bool;

/// `inner`, except that while armed, every call `stalls` picks never answers.
pub struct Stalling<S> {
    pub inner: S,
    stalls: Stalls,
    armed: AtomicBool,
}

impl<S> Stalling<S> {
    /// Armed from the start.
    pub fn new(inner: S, stalls: Stalls) -> Self {
        Stalling {
            inner,
            stalls,
            armed: AtomicBool::new(true),
        }
    }

    pub fn arm(&self, armed: bool) {
        self.armed.store(armed, Ordering::SeqCst);
    }
}

impl<S: Send + Sync> Layer for Stalling<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        Box::pin(async move {
            if self.armed.load(Ordering::SeqCst) && (self.stalls)(&call) {
                return std::future::pending().await;
            }
            answer.await
        })
    }
}
