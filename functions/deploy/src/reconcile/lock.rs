//! The deploy lock: one store document held through [`snapwake::lock::DocumentLock`]. A second
//! deploy finds it held and answers "already running"; the lease is the run's remaining time, so
//! a run that dies frees the lock when its Lambda would have ended.

use snapwake::lock::{DocumentLock, LockSettings};
use snapwake::store::{AgentStore, DocumentKey};

pub use snapwake::lock::{DocumentAcquired as Acquired, DocumentHold as DeployLock};

pub const LOCK_KEY: DocumentKey<'static> = DocumentKey {
    pk: "LOCK#deploy",
    sk: "LOCK",
};

pub fn deploy_lock<'a, S: AgentStore>(
    store: &'a S,
    settings: &'a LockSettings,
) -> DocumentLock<'a, S> {
    DocumentLock::new(store, LOCK_KEY, settings)
}
