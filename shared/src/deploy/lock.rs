//! The deploy lock: one store document (`LOCK#deploy` / `LOCK`) held through
//! [`crate::lock::DocumentLock`], the same acquire, fence, lease and skew margin as every other
//! lock. A second deploy running at the same time finds it held and answers "already running".
//! The lease is the run's remaining time, so a run that dies frees the lock when its Lambda
//! would have ended.

use crate::lock::{DocumentLock, LockSettings};
use crate::store::{AgentStore, DocumentKey};

pub use crate::lock::{DocumentAcquired as Acquired, DocumentHold as DeployLock};

pub const LOCK_KEY: DocumentKey<'static> = DocumentKey {
    pk: "LOCK#deploy",
    sk: "LOCK",
};

/// The deploy lock over `store` (its lease is given per call: the run's remaining time).
pub fn deploy_lock<'a, S: AgentStore>(
    store: &'a S,
    settings: &'a LockSettings,
) -> DocumentLock<'a, S> {
    DocumentLock::new(store, LOCK_KEY, settings)
}
