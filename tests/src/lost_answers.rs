//! A store whose answers a test loses on purpose, at the store trait: writes that land and
//! then answer `Unavailable` (the answer lost on its way back), and reads that fail after them.
//! The wire-level version of the same faults is [`crate::wire`].

use std::sync::atomic::{AtomicU32, Ordering};

use snapwake::store::{Answer, Call, Changes, Condition, Layer, StoreError};

/// Which agent writes a [`LostAnswers`] loses.
pub type Recognise = fn(&Condition, &Changes) -> bool;

/// `inner`, except that:
/// - the next `lose_updates` agent writes that `lost_update` recognises land, then answer
///   `Unavailable`; each such loss arms `record_reads_after` failing record reads;
/// - the next `lose_documents` document writes land, then answer `Unavailable`;
/// - the next `fail_record_reads` record reads and `fail_document_reads` document reads answer
///   `Unavailable` without reading.
///
/// Counters are public so a test can arm them between calls.
pub struct LostAnswers<S> {
    pub inner: S,
    lost_update: Recognise,
    record_reads_after: u32,
    pub lose_updates: AtomicU32,
    pub lose_documents: AtomicU32,
    pub fail_record_reads: AtomicU32,
    pub fail_document_reads: AtomicU32,
}

impl<S> LostAnswers<S> {
    /// Nothing lost yet; agent writes `lost_update` recognises are the ones `lose_updates`
    /// counts, and each loss fails the next `record_reads_after` record reads.
    pub fn new(inner: S, lost_update: Recognise, record_reads_after: u32) -> Self {
        LostAnswers {
            inner,
            lost_update,
            record_reads_after,
            lose_updates: AtomicU32::new(0),
            lose_documents: AtomicU32::new(0),
            fail_record_reads: AtomicU32::new(0),
            fail_document_reads: AtomicU32::new(0),
        }
    }
}

/// Take one from `left` if any is left.
fn spend(left: &AtomicU32) -> bool {
    left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn lost(what: &str) -> StoreError {
    StoreError::Unavailable(format!("injected: the answer of the {what} was lost"))
}

impl<S: Send + Sync> Layer for LostAnswers<S> {
    type Inner = S;

    fn inner(&self) -> &S {
        &self.inner
    }

    fn around<'a, T: Send + 'a>(&'a self, call: Call<'a>, answer: Answer<'a, T>) -> Answer<'a, T> {
        Box::pin(async move {
            match call {
                Call::Get(_) if spend(&self.fail_record_reads) => {
                    Err(StoreError::Unavailable("injected: the read failed".into()))
                }
                Call::GetDocument(_) if spend(&self.fail_document_reads) => {
                    Err(StoreError::Unavailable("injected: the read failed".into()))
                }
                Call::Update(_, condition, changes)
                    if (self.lost_update)(condition, changes) && spend(&self.lose_updates) =>
                {
                    let _ = answer.await;
                    self.fail_record_reads
                        .store(self.record_reads_after, Ordering::SeqCst);
                    Err(lost("agent write"))
                }
                Call::PutDocument(_) => {
                    let written = answer.await;
                    if spend(&self.lose_documents) {
                        return Err(lost("document write"));
                    }
                    written
                }
                _ => answer.await,
            }
        })
    }
}
