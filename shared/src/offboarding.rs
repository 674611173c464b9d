//! What an offboarding leaves in the table (docs/operations.md, "Offboarding"): the owner's
//! progress under each owner key (`OFFBOARD#<owner_key>` / `PROGRESS`), and the owners whose
//! offboarding is unfinished (`OFFBOARD` / `PENDING`), which the sweep finishes.
//!
//! While it is unfinished, nothing of the owner's is woken, put to sleep, kept alive, scheduled
//! or created: [`admit`] is the one check (410 `AGENT_GONE`). A finished one refuses nothing:
//! every agent it found is a tombstone, and the person may come back.
//!
//! A request admitted just before the progress was written may still write its record after
//! the offboarding looked, so it finishes only when nothing is left *and* a complete listing
//! began at least [`ADMITTED_FOR`] after the progress was written. A failed listing is no
//! listing: the next run (a retry, a sweep) lists again.

use serde::{Deserialize, Serialize};

use std::time::Duration;

use crate::ambient::now_ms;
use crate::domain::AgentKey;
use crate::error::Error;
use crate::identity::{owner_keys, user_session_id, UserSessionId};
use crate::store::update::{update_document, Step, Updated};
use crate::store::{AgentStore, DocumentKey, StoreError};

/// The owners whose offboarding is unfinished.
pub const PENDING: DocumentKey<'static> = DocumentKey {
    pk: "OFFBOARD",
    sk: "PENDING",
};

const PROGRESS_SK: &str = "PROGRESS";
/// How many times a document that keeps changing under a write is tried.
const ROUNDS: u32 = 5;

/// The longest a request admitted just before an offboarding may work before writing its
/// record: `crate::invocation::REQUEST_BUDGET` (28 s) and `ANSWER_MARGIN`; a tick's the same.
pub const ADMITTED_FOR: Duration = Duration::from_secs(30);

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub owner: String,
    pub started_at_ms: u64,
    /// The agents not deleted yet (held by a wake, a sleep or a delete, or failed).
    pub left: Vec<AgentKey>,
    /// Runs so far (the event's, its retries', the sweeps').
    pub runs: u64,
    /// When the last complete listing (owner index and every Tool) began (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listed_at_ms: Option<u64>,
    /// When nothing was left (epoch ms).
    pub finished_at_ms: Option<u64>,
}

impl Progress {
    pub fn is_finished(&self) -> bool {
        self.finished_at_ms.is_some()
    }

    /// The earliest a listing may begin to find every admitted request's agent.
    pub fn last_listing_from_ms(&self) -> u64 {
        self.started_at_ms + ADMITTED_FOR.as_millis() as u64
    }

    /// Whether its last complete listing began late enough to be the last one.
    pub fn listed_late_enough(&self) -> bool {
        self.listed_at_ms
            .is_some_and(|at| at >= self.last_listing_from_ms())
    }

    pub fn may_finish(&self) -> bool {
        self.left.is_empty() && self.listed_late_enough()
    }

    /// Finish it now if it may be; whether it is finished.
    pub fn finish_if_done(&mut self, now_ms: u64) -> bool {
        if self.finished_at_ms.is_none() && self.may_finish() {
            self.finished_at_ms = Some(now_ms);
        }
        self.is_finished()
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Pending {
    owners: Vec<String>,
}

fn progress_pk(owner_key: &str) -> String {
    format!("OFFBOARD#{owner_key}")
}

/// The progress recorded for `owner` (under its current owner key), if any.
pub async fn progress<S: AgentStore>(
    store: &S,
    owner: &str,
) -> Result<Option<Progress>, StoreError> {
    let [current, _] = owner_keys(owner);
    read(store, &current).await
}

async fn read<S: AgentStore>(store: &S, owner_key: &str) -> Result<Option<Progress>, StoreError> {
    let pk = progress_pk(owner_key);
    let doc = store
        .get_document(DocumentKey {
            pk: &pk,
            sk: PROGRESS_SK,
        })
        .await?;
    Ok(doc.and_then(|d| serde_json::from_value(d.value).ok()))
}

/// Proof that the owner was not being offboarded when [`admit`] asked, which a wake or a sleep
/// needs to start. Only [`admit`] makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admitted(());

/// Refuses `key` when its owner is being offboarded (410 `AGENT_GONE`, before any AgentKit
/// call): one read of the owner's progress.
pub async fn admit<S: AgentStore>(store: &S, key: &AgentKey) -> Result<Admitted, Error> {
    admit_owner_key(store, owner_key_of(key)).await
}

async fn admit_owner_key<S: AgentStore>(
    store: &S,
    owner_key: Option<String>,
) -> Result<Admitted, Error> {
    let Some(owner_key) = owner_key else {
        return Ok(Admitted(()));
    };
    if read(store, &owner_key)
        .await?
        .is_some_and(|p| !p.is_finished())
    {
        tracing::info!(%owner_key, "refused: the owner is being offboarded");
        return Err(Error::AgentGone);
    }
    Ok(Admitted(()))
}

/// The owner key of `key`'s UserSessionId (`None` for a `snapshot-<id>` agent).
fn owner_key_of(key: &AgentKey) -> Option<String> {
    user_session_id(&key.agent_id)
        .map(UserSessionId::parse)
        .and_then(|id| id.owner_key())
}

/// Record `progress` under both of the owner's keys. The owner joins the pending list before an
/// unfinished progress is written and leaves only after a finished one is, so the sweep always
/// finds an unfinished offboarding, even when a write fails.
pub async fn record<S: AgentStore>(store: &S, progress: &Progress) -> Result<(), StoreError> {
    let finished = progress.is_finished();
    if !finished {
        set_pending(store, &progress.owner, true).await?;
    }
    let value = serde_json::to_value(progress).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    for owner_key in owner_keys(&progress.owner) {
        let pk = progress_pk(&owner_key);
        put(
            store,
            DocumentKey {
                pk: &pk,
                sk: PROGRESS_SK,
            },
            &value,
        )
        .await?;
    }
    if finished {
        set_pending(store, &progress.owner, false).await?;
    }
    Ok(())
}

pub async fn pending<S: AgentStore>(store: &S) -> Result<Vec<String>, StoreError> {
    Ok(store
        .get_document(PENDING)
        .await?
        .and_then(|d| serde_json::from_value::<Pending>(d.value).ok())
        .map(|p| p.owners)
        .unwrap_or_default())
}

async fn set_pending<S: AgentStore>(store: &S, owner: &str, on: bool) -> Result<(), StoreError> {
    let updated = update_document(store, PENDING, ROUNDS, |mut list: Pending| {
        if list.owners.iter().any(|o| o == owner) == on {
            return Step::Stop(());
        }
        if on {
            list.owners.push(owner.to_string());
        } else {
            list.owners.retain(|o| o != owner);
        }
        Step::Write(list)
    })
    .await?;
    kept_changing(updated, "the pending offboardings kept changing")
}

async fn put<S: AgentStore>(
    store: &S,
    key: DocumentKey<'_>,
    value: &serde_json::Value,
) -> Result<(), StoreError> {
    let updated = update_document(store, key, ROUNDS, |_: serde_json::Value| {
        Step::<_, ()>::Write(value.clone())
    })
    .await?;
    kept_changing(updated, "an offboarding's progress kept changing")
}

/// An update lost to other writers every round is unavailable, for now.
fn kept_changing<D, R>(updated: Updated<D, R>, why: &str) -> Result<(), StoreError> {
    match updated {
        Updated::KeptChanging => Err(StoreError::Unavailable(why.into())),
        Updated::Written(_) | Updated::Stopped(_) => Ok(()),
    }
}

pub fn start(owner: &str) -> Progress {
    Progress {
        owner: owner.to_string(),
        started_at_ms: now_ms(),
        ..Progress::default()
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;
    use crate::store::{Answer, Call, Layer};

    /// The table, but no offboarding's progress can be written.
    struct ProgressRefused<'t>(&'t MemoryStore);

    impl Layer for ProgressRefused<'_> {
        type Inner = MemoryStore;

        fn inner(&self) -> &MemoryStore {
            self.0
        }

        fn around<'a, T: Send + 'a>(
            &'a self,
            call: Call<'a>,
            answer: Answer<'a, T>,
        ) -> Answer<'a, T> {
            let refused = matches!(call, Call::PutDocument(key) if key.sk == PROGRESS_SK);
            Box::pin(async move {
                if refused {
                    return Err(StoreError::Unavailable("injected: the table failed".into()));
                }
                answer.await
            })
        }
    }

    #[tokio::test]
    async fn an_unfinished_offboarding_stays_pending_until_its_finish_is_written() {
        let table = MemoryStore::default();
        let owner = "grace@example.com";
        let mut progress = start(owner);
        record(&table, &progress).await.unwrap();
        assert_eq!(pending(&table).await.unwrap(), vec![owner.to_string()]);

        // Its finish cannot be written: it is still pending, for the sweep to finish.
        progress.finished_at_ms = Some(now_ms());
        let refused = ProgressRefused(&table);
        assert!(record(&refused, &progress).await.is_err());
        assert_eq!(pending(&table).await.unwrap(), vec![owner.to_string()]);
        let kept = super::progress(&table, owner).await.unwrap().unwrap();
        assert!(!kept.is_finished());

        // Written, it leaves the list.
        record(&table, &progress).await.unwrap();
        assert!(pending(&table).await.unwrap().is_empty());
    }
}
