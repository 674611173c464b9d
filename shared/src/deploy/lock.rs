//! The deploy lock: one store document (`LOCK#deploy` / `LOCK`) with `holder`, `fence` and
//! `lease_until_ms`, taken with the same CAS-and-fence discipline as the wake lock
//! ([`crate::wake`]): acquire is a compare-and-swap on the version seen (a live lease of
//! another holder means "already running"); an ambiguous write is re-read and decided by the
//! holder token; every later write of the holder is a CAS on the version it wrote, so a holder
//! whose lease expired and was taken over finds out instead of overwriting. The lease is the
//! run's remaining time, so a run that dies frees the lock when its Lambda would have ended.
//!
//! The document never expires on its own: the fence must keep growing across runs.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::store::{now_ms, AgentStore, Document, DocumentKey, StoreError};

pub const LOCK_KEY: DocumentKey<'static> = DocumentKey {
    pk: "LOCK#deploy",
    sk: "LOCK",
};

/// A lease is expired only this long after its end (clocks a little apart).
pub const SKEW_MARGIN: Duration = Duration::from_secs(2);

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

    fn is_held(&self, now_ms: u64) -> bool {
        self.holder.is_some() && self.lease_until_ms + SKEW_MARGIN.as_millis() as u64 >= now_ms
    }
}

/// The lock as held by this run.
#[derive(Debug)]
pub struct DeployLock {
    pub holder: String,
    pub fence: u64,
    version: u64,
}

/// The result of trying to take the lock.
#[derive(Debug)]
pub enum Acquired {
    Held(DeployLock),
    /// Another run holds it until `lease_until_ms`.
    Busy {
        lease_until_ms: u64,
    },
}

/// Take the lock for `lease`.
pub async fn acquire<S: AgentStore>(store: &S, lease: Duration) -> Result<Acquired, Error> {
    let me = uuid::Uuid::new_v4().simple().to_string();
    let mut seen = store.get_document(LOCK_KEY).await?;
    for _ in 0..3 {
        let state = seen.as_ref().map(LockState::read).unwrap_or_default();
        let now = now_ms();
        if state.is_held(now) {
            return Ok(Acquired::Busy {
                lease_until_ms: state.lease_until_ms,
            });
        }
        let mine = LockState {
            holder: Some(me.clone()),
            fence: state.fence + 1,
            lease_until_ms: now + lease.as_millis() as u64,
        };
        let expected = seen.as_ref().map_or(0, |d| d.version);
        match put(store, &mine, expected).await {
            Ok(doc) => return Ok(Acquired::Held(held(&me, &mine, &doc))),
            Err(StoreError::DocumentConflict { current }) => {
                // A retried write of our own comes back as a conflict showing our token.
                if let Some(doc) = current.as_deref() {
                    let now_state = LockState::read(doc);
                    if now_state.holder.as_deref() == Some(me.as_str()) {
                        return Ok(Acquired::Held(held(&me, &now_state, doc)));
                    }
                }
                seen = current.map(|b| *b);
            }
            Err(StoreError::Unavailable(why)) => {
                tracing::warn!(%why, "deploy lock acquire was ambiguous; re-reading");
                seen = store.get_document(LOCK_KEY).await?;
                if let Some(doc) = seen.as_ref() {
                    let now_state = LockState::read(doc);
                    if now_state.holder.as_deref() == Some(me.as_str()) {
                        return Ok(Acquired::Held(held(&me, &now_state, doc)));
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    let state = seen.as_ref().map(LockState::read).unwrap_or_default();
    Ok(Acquired::Busy {
        lease_until_ms: state.lease_until_ms,
    })
}

fn held(me: &str, state: &LockState, doc: &Document) -> DeployLock {
    DeployLock {
        holder: me.to_string(),
        fence: state.fence,
        version: doc.version,
    }
}

async fn put<S: AgentStore>(
    store: &S,
    state: &LockState,
    expected: u64,
) -> Result<Document, StoreError> {
    let value = serde_json::to_value(state).unwrap_or_default();
    store.put_document(LOCK_KEY, &value, expected, None).await
}

impl DeployLock {
    /// Fenced check before a write that must come from the holder (the registry): extend the
    /// lease to `lease` from now by a CAS on the version we wrote. `false`: the lock was taken
    /// over (our lease expired); the caller must not write.
    pub async fn confirm<S: AgentStore>(
        &mut self,
        store: &S,
        lease: Duration,
    ) -> Result<bool, Error> {
        let state = LockState {
            holder: Some(self.holder.clone()),
            fence: self.fence,
            lease_until_ms: now_ms() + lease.as_millis() as u64,
        };
        match put(store, &state, self.version).await {
            Ok(doc) => {
                self.version = doc.version;
                Ok(true)
            }
            Err(StoreError::DocumentConflict { current }) => {
                let ours = current.as_deref().is_some_and(|d| {
                    let s = LockState::read(d);
                    s.holder.as_deref() == Some(self.holder.as_str()) && s.fence == self.fence
                });
                if let (true, Some(doc)) = (ours, current) {
                    self.version = doc.version;
                }
                Ok(ours)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Release: clear holder and lease, keep the fence. A lock taken over meanwhile is left
    /// alone.
    pub async fn release<S: AgentStore>(self, store: &S) -> Result<(), Error> {
        let state = LockState {
            holder: None,
            fence: self.fence,
            lease_until_ms: 0,
        };
        match put(store, &state, self.version).await {
            Ok(_) => Ok(()),
            Err(StoreError::DocumentConflict { .. }) => {
                tracing::warn!("deploy lock was taken over before release; leaving it");
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;

    #[tokio::test]
    async fn one_holder_at_a_time_fences_grow_and_an_expired_lease_is_taken_over() {
        let store = MemoryStore::new();
        let Acquired::Held(first) = acquire(&store, Duration::from_secs(60)).await.unwrap() else {
            panic!("a free lock is taken")
        };
        assert_eq!(first.fence, 1);
        assert!(matches!(
            acquire(&store, Duration::from_secs(60)).await.unwrap(),
            Acquired::Busy { .. }
        ));
        first.release(&store).await.unwrap();
        let Acquired::Held(mut second) = acquire(&store, Duration::ZERO).await.unwrap() else {
            panic!("a released lock is taken")
        };
        assert_eq!(second.fence, 2);
        // A zero lease is still live within the skew margin...
        assert!(matches!(
            acquire(&store, Duration::from_secs(60)).await.unwrap(),
            Acquired::Busy { .. }
        ));
        // ...and taken over once past it (simulated by writing an old lease).
        let stale = LockState {
            holder: Some(second.holder.clone()),
            fence: second.fence,
            lease_until_ms: 1,
        };
        let doc = put(&store, &stale, second.version).await.unwrap();
        second.version = doc.version;
        let Acquired::Held(third) = acquire(&store, Duration::from_secs(60)).await.unwrap() else {
            panic!("an expired lease is taken over")
        };
        assert_eq!(third.fence, 3);
        // The old holder finds out and writes nothing.
        assert!(!second
            .confirm(&store, Duration::from_secs(60))
            .await
            .unwrap());
        second.release(&store).await.unwrap();
        assert!(matches!(
            acquire(&store, Duration::from_secs(60)).await.unwrap(),
            Acquired::Busy { .. }
        ));
    }
}
