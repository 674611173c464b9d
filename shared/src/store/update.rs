//! The one read, change, conditional-write loop (docs/architecture.md, *Conditional updates*):
//! read a versioned item, decide, write under the version read, again while writes are lost.
//! What a round reads, decides and writes stays with the caller, with its condition.

use std::future::Future;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{AgentStore, Document, DocumentKey, StoreError};

/// What a change decides from the item it read.
pub enum Step<W, R> {
    Write(W),
    /// Nothing (more) to write: the update ends with this.
    Stop(R),
}

/// How one conditional write ended.
pub enum Attempt<T, D> {
    Written(D),
    /// Another writer came first. `Some(item)`: the item as the store answered it (decide
    /// from it); `None`: read it again.
    Lost(Option<Option<T>>),
}

/// How an update ended.
#[derive(Debug)]
pub enum Updated<D, R> {
    Written(D),
    Stopped(R),
    /// Every round was lost to other writers.
    KeptChanging,
}

/// Read, decide with `change`, write, at most `rounds` rounds (one at least); an error ends it.
pub async fn update<T, W, D, R, E, RF, WF>(
    rounds: u32,
    read: impl Fn() -> RF,
    mut change: impl FnMut(Option<T>) -> Step<W, R>,
    write: impl Fn(W) -> WF,
) -> Result<Updated<D, R>, E>
where
    RF: Future<Output = Result<Option<T>, E>>,
    WF: Future<Output = Result<Attempt<T, D>, E>>,
{
    let mut told = None;
    for _ in 0..rounds.max(1) {
        let current = match told.take() {
            Some(item) => item,
            None => read().await?,
        };
        match change(current) {
            Step::Stop(answer) => return Ok(Updated::Stopped(answer)),
            Step::Write(item) => match write(item).await? {
                Attempt::Written(written) => return Ok(Updated::Written(written)),
                Attempt::Lost(item) => told = item,
            },
        }
    }
    Ok(Updated::KeptChanging)
}

/// [`update`] of the typed value of one document: `change` is given what it holds (the
/// default when absent, or when it does not read as `T`) and says what it should hold.
pub async fn update_document<S: AgentStore, T, R>(
    store: &S,
    key: DocumentKey<'_>,
    rounds: u32,
    mut change: impl FnMut(T) -> Step<T, R>,
) -> Result<Updated<Document, R>, StoreError>
where
    T: Serialize + DeserializeOwned + Default,
{
    update(
        rounds,
        || store.get_document(key),
        |doc: Option<Document>| {
            let version = doc.as_ref().map_or(0, |d| d.version);
            let value = doc
                .and_then(|d| serde_json::from_value(d.value).ok())
                .unwrap_or_default();
            match change(value) {
                Step::Write(value) => Step::Write((value, version)),
                Step::Stop(answer) => Step::Stop(answer),
            }
        },
        |(value, version): (T, u64)| async move {
            let value =
                serde_json::to_value(&value).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            match store.put_document(key, &value, version, None).await {
                Ok(doc) => Ok(Attempt::Written(doc)),
                Err(StoreError::DocumentConflict { .. }) => Ok(Attempt::Lost(None)),
                Err(e) => Err(e),
            }
        },
    )
    .await
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::store::memory::MemoryStore;

    const KEY: DocumentKey<'static> = DocumentKey {
        pk: "TEST#update",
        sk: "A",
    };

    #[tokio::test]
    async fn a_change_is_written_under_the_version_read_and_a_stop_writes_nothing() {
        let store = MemoryStore::default();
        let add = |n: u64| move |v: Vec<u64>| Step::<Vec<u64>, ()>::Write([v, vec![n]].concat());
        let first = update_document(&store, KEY, 3, add(1)).await.unwrap();
        assert!(matches!(first, Updated::Written(ref d) if d.version == 1));
        update_document(&store, KEY, 3, add(2)).await.unwrap();
        let stopped = update_document(&store, KEY, 3, |v: Vec<u64>| Step::<Vec<u64>, _>::Stop(v))
            .await
            .unwrap();
        assert!(matches!(stopped, Updated::Stopped(ref v) if v == &vec![1, 2]));
        let doc = store.get_document(KEY).await.unwrap().unwrap();
        assert_eq!(doc.version, 2, "the stop wrote nothing");
    }

    #[tokio::test]
    async fn a_round_lost_to_another_writer_decides_again_from_what_it_wrote() {
        let store = &MemoryStore::default();
        let rounds = std::sync::atomic::AtomicU32::new(0);
        // Every first write of a round loses to a rival's, written just before it.
        let updated = update(
            3,
            || store.get_document(KEY),
            |doc: Option<Document>| {
                rounds.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Step::<_, ()>::Write(doc.map_or(0, |d| d.version))
            },
            |version| async move {
                let rival = serde_json::json!("rival");
                store.put_document(KEY, &rival, version, None).await?;
                match store.put_document(KEY, &rival, version, None).await {
                    Ok(doc) => Ok(Attempt::Written(doc)),
                    Err(StoreError::DocumentConflict { .. }) => Ok(Attempt::Lost(None)),
                    Err(e) => Err(e),
                }
            },
        )
        .await
        .unwrap();
        assert!(matches!(updated, Updated::KeptChanging));
        assert_eq!(rounds.load(std::sync::atomic::Ordering::SeqCst), 3);
    }
}
