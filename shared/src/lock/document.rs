//! The same lock on a store document (the deploy lock): "fenced" is a CAS on the version the holder
//! last wrote, and the document never expires, so the fence keeps growing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::agent::LockSettings;
use crate::ambient::now_ms;
use crate::store::update::{update, Attempt, Step, Updated};
use crate::store::{AgentStore, Document, DocumentKey, StoreError};

/// What the document holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    #[serde(default)]
    pub fence: u64,
    #[serde(default)]
    pub lease_until_ms: u64,
}

impl LockState {
    fn read(doc: &Document) -> LockState {
        serde_json::from_value(doc.value.clone()).unwrap_or_default()
    }
}

/// The lock as held by this caller.
#[derive(Debug)]
pub struct DocumentHold {
    pub holder: String,
    pub fence: u64,
    version: u64,
}

/// The result of trying to take the lock.
#[derive(Debug)]
pub enum DocumentAcquired {
    Held(DocumentHold),
    /// Another caller holds it until `lease_until_ms`.
    Busy {
        lease_until_ms: u64,
    },
}

/// A lock kept in the document at `key`.
pub struct DocumentLock<'a, S> {
    store: &'a S,
    key: DocumentKey<'a>,
    settings: &'a LockSettings,
}

impl<'a, S: AgentStore> DocumentLock<'a, S> {
    pub fn new(store: &'a S, key: DocumentKey<'a>, settings: &'a LockSettings) -> Self {
        DocumentLock {
            store,
            key,
            settings,
        }
    }

    /// Take the lock for `lease` (a live lease of somebody else: [`DocumentAcquired::Busy`]).
    pub async fn acquire(&self, lease: Duration) -> Result<DocumentAcquired, StoreError> {
        let me = crate::ambient::fresh_hex();
        // The lease of the last state seen: what a caller that never got it waits for.
        let lease_seen = AtomicU64::new(0);
        let saw = |doc: Option<&Document>| {
            let state = doc.map(LockState::read).unwrap_or_default();
            lease_seen.store(state.lease_until_ms, Ordering::Relaxed);
            state
        };
        let updated = update(
            self.settings.max_rounds,
            || self.store.get_document(self.key),
            |seen: Option<Document>| {
                let version = seen.as_ref().map_or(0, |d| d.version);
                let state = saw(seen.as_ref());
                let now = now_ms();
                if state.holder.is_some() && self.settings.lease_holds(state.lease_until_ms, now) {
                    return Step::Stop(());
                }
                let mine = LockState {
                    holder: Some(me.clone()),
                    fence: state.fence + 1,
                    lease_until_ms: now + lease.as_millis() as u64,
                };
                Step::Write((mine, version))
            },
            // Lost, the write answers the document as the winner left it: decided from that.
            |(mine, version): (LockState, u64)| async move {
                Ok(match self.write(&mine, version).await? {
                    Ok(doc) => Attempt::Written((mine.fence, doc.version)),
                    Err(current) => {
                        saw(current.as_ref());
                        Attempt::Lost(Some(current))
                    }
                })
            },
        )
        .await?;
        Ok(match updated {
            Updated::Written((fence, version)) => DocumentAcquired::Held(DocumentHold {
                holder: me,
                fence,
                version,
            }),
            Updated::Stopped(()) | Updated::KeptChanging => DocumentAcquired::Busy {
                lease_until_ms: lease_seen.load(Ordering::Relaxed),
            },
        })
    }

    /// Before a holder-only write, extend the lease to `lease` from now; `false`: taken over.
    pub async fn confirm(
        &self,
        hold: &mut DocumentHold,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let state = LockState {
            holder: Some(hold.holder.clone()),
            fence: hold.fence,
            lease_until_ms: now_ms() + lease.as_millis() as u64,
        };
        self.fenced(hold, &state).await
    }

    /// Give the lock back, keeping the fence; a lock taken over meanwhile is left alone.
    pub async fn release(&self, mut hold: DocumentHold) -> Result<(), StoreError> {
        let state = LockState {
            holder: None,
            fence: hold.fence,
            lease_until_ms: 0,
        };
        if !self.fenced(&mut hold, &state).await? {
            tracing::warn!(
                lock = self.key.pk,
                "the lock was taken over before release; leaving it"
            );
        }
        Ok(())
    }

    /// Write `state` by a CAS on the version we last wrote; `false` when the lock was lost.
    async fn fenced(&self, hold: &mut DocumentHold, state: &LockState) -> Result<bool, StoreError> {
        Ok(match self.write(state, hold.version).await? {
            Ok(doc) => {
                hold.version = doc.version;
                true
            }
            Err(_) => false,
        })
    }

    /// Write `state` if the document is at `expected` (0: none); `Err`: as the winner left it.
    async fn write(
        &self,
        state: &LockState,
        expected: u64,
    ) -> Result<Result<Document, Option<Document>>, StoreError> {
        let shows = |doc: &Document| LockState::read(doc) == *state;
        let mut why = String::new();
        for _ in 0..self.settings.write_attempts.max(1) {
            match self.put(state, expected).await {
                Ok(doc) => return Ok(Ok(doc)),
                Err(StoreError::DocumentConflict { current }) => {
                    return Ok(match current.map(|b| *b) {
                        Some(doc) if shows(&doc) => Ok(doc),
                        other => Err(other),
                    })
                }
                Err(StoreError::Unavailable(e)) => {
                    tracing::warn!(lock = self.key.pk, error = %e, "a lock write was ambiguous; sending it again");
                    why = e;
                }
                Err(e) => return Err(e),
            }
        }
        match self.store.get_document(self.key).await? {
            Some(doc) if shows(&doc) => Ok(Ok(doc)),
            current if current.as_ref().map_or(0, |d| d.version) == expected => {
                Err(StoreError::Unavailable(why))
            }
            other => Ok(Err(other)),
        }
    }

    async fn put(&self, state: &LockState, expected: u64) -> Result<Document, StoreError> {
        let value = serde_json::to_value(state).unwrap_or_default();
        self.store
            .put_document(self.key, &value, expected, None)
            .await
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;

    const KEY: DocumentKey<'static> = DocumentKey {
        pk: "LOCK#test",
        sk: "LOCK",
    };

    #[tokio::test]
    async fn one_holder_at_a_time_fences_grow_and_an_expired_lease_is_taken_over() {
        let store = MemoryStore::new();
        let settings = LockSettings::default();
        let lock = DocumentLock::new(&store, KEY, &settings);
        let minute = Duration::from_secs(60);
        let DocumentAcquired::Held(first) = lock.acquire(minute).await.unwrap() else {
            panic!("a free lock is taken")
        };
        assert_eq!(first.fence, 1);
        assert!(matches!(
            lock.acquire(minute).await.unwrap(),
            DocumentAcquired::Busy { .. }
        ));
        lock.release(first).await.unwrap();
        let DocumentAcquired::Held(mut second) = lock.acquire(Duration::ZERO).await.unwrap() else {
            panic!("a released lock is taken")
        };
        assert_eq!(second.fence, 2);
        // A zero lease is still live within the skew margin...
        assert!(matches!(
            lock.acquire(minute).await.unwrap(),
            DocumentAcquired::Busy { .. }
        ));
        // ...and taken over once past it (simulated by writing an old lease).
        let stale = LockState {
            holder: Some(second.holder.clone()),
            fence: second.fence,
            lease_until_ms: 1,
        };
        let doc = lock.put(&stale, second.version).await.unwrap();
        second.version = doc.version;
        let DocumentAcquired::Held(third) = lock.acquire(minute).await.unwrap() else {
            panic!("an expired lease is taken over")
        };
        assert_eq!(third.fence, 3);
        // The old holder finds out and writes nothing.
        assert!(!lock.confirm(&mut second, minute).await.unwrap());
        lock.release(second).await.unwrap();
        assert!(matches!(
            lock.acquire(minute).await.unwrap(),
            DocumentAcquired::Busy { .. }
        ));
    }
}
