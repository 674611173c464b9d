//! A store bounded by a request's deadline: every call gets the time left (plus a short grace,
//! [`STORE_GRACE`]) and, past it, is abandoned and answers [`StoreError::Unavailable`] — for a
//! write, ambiguous, as any unanswered write is. A handler wraps its store in one of these per
//! request, so a table that hangs or has gone away becomes a 503 inside API Gateway's 30 s,
//! never a hung request (the SDK's own timeouts are per attempt, not per request).

use std::time::Duration;

use super::{Answer, Call, Layer, StoreError};
use crate::deadline::Deadline;

/// Store calls may run this long past the deadline. Deadlines already keep a margin to answer
/// (2 s before the Lambda's end), and a write that gives a lock back or records a failure is
/// worth finishing rather than leaving an agent held until its lease runs out.
pub const STORE_GRACE: Duration = Duration::from_millis(1000);

/// `S`, every call bounded by `deadline`.
#[derive(Debug)]
pub struct Within<'a, S> {
    store: &'a S,
    deadline: Deadline,
}

// By hand: a derive would ask `S: Copy`, and only the reference is copied.
impl<S> Clone for Within<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Within<'_, S> {}

impl<'a, S> Within<'a, S> {
    pub fn new(store: &'a S, deadline: Deadline) -> Self {
        Within { store, deadline }
    }

    pub fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// The same store bounded by the earlier of its deadline and `deadline` (one part of a
    /// request, or one agent of a tick, given less time than the whole).
    pub fn until(&self, deadline: Deadline) -> Within<'a, S> {
        Within {
            store: self.store,
            deadline: self.deadline.min(deadline),
        }
    }

    /// The store underneath, unbounded.
    pub fn unbounded(&self) -> &'a S {
        self.store
    }
}

impl<S: Send + Sync> Layer for Within<'_, S> {
    type Inner = S;

    fn inner(&self) -> &S {
        self.store
    }

    fn around<'a, T: Send + 'a>(&'a self, _: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        Box::pin(async move {
            let limit = self.deadline.remaining() + STORE_GRACE;
            // Boxed: an SDK request is a large future, and every caller would carry one per call
            // site (debug builds then need megabytes of stack).
            match tokio::time::timeout(limit, Box::pin(answer)).await {
                Ok(answer) => answer,
                Err(_) => Err(StoreError::Unavailable(
                    "the table did not answer within the request's budget".into(),
                )),
            }
        })
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::domain::{AgentKey, Kind};
    use crate::store::memory::MemoryStore;
    use crate::store::{AgentStore, Changes, Condition};

    /// A table that never answers reads (as a stopped DynamoDB whose connections hang).
    struct Hangs(MemoryStore);

    impl Layer for Hangs {
        type Inner = MemoryStore;
        fn inner(&self) -> &MemoryStore {
            &self.0
        }
        fn around<'a, T: Send + 'a>(
            &'a self,
            call: Call<'a>,
            answer: Answer<'a, T>,
        ) -> Answer<'a, T> {
            Box::pin(async move {
                if call.writes() {
                    return answer.await;
                }
                std::future::pending().await
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_table_that_hangs_answers_unavailable_at_the_deadline_and_grace() {
        let store = Hangs(MemoryStore::new());
        let deadline = Deadline::after(Duration::from_secs(3));
        let within = Within::new(&store, deadline);
        let started = tokio::time::Instant::now();
        let got = within.get(&AgentKey::new(Kind::Codex, "x")).await;
        assert!(matches!(got, Err(StoreError::Unavailable(_))));
        assert_eq!(started.elapsed(), Duration::from_secs(3) + STORE_GRACE);
        // Past the deadline a call still gets the grace, no more.
        let started = tokio::time::Instant::now();
        assert!(within.get_registry().await.is_err());
        assert_eq!(started.elapsed(), STORE_GRACE);
        // Calls that answer are passed through.
        let key = AgentKey::new(Kind::Codex, "y");
        let written = within
            .update(&key, &Condition::Absent, &Changes::default())
            .await
            .unwrap();
        assert_eq!(written.version, 1);
    }
}
