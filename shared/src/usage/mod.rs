//! Usage and what it saves (docs/usage.md): each announced change of the table's stream added
//! to its agent's day rows, once ([`keep`]), and the report `GET /v1/usage` reads back
//! ([`report`]): the rows, what is still open on the records, prices and savings, JSON or CSV.
//!
//! Kept by the stream's consumer beside the state-change events (the announce function, and
//! `serve`'s relay), from the same changes: a change is in the stream once it landed, whatever
//! became of its writer, so nothing is lost; each row remembers the changes added to it, so a
//! batch delivered again adds nothing twice.

pub mod report;

use crate::domain::usage::{tally_change, UsageChange};
use crate::domain::Announce;
use crate::invocation::{self, Metric};
use crate::store::{RecordChange, UsageRow, UsageStore};

/// What keeping a batch's usage did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// Rows a change was added to (not counting those that had it already).
    pub added: usize,
    /// The `sequence` of the first change whose rows could not all be written: it and what
    /// follows are to be handed over again.
    pub failed_at: Option<String>,
}

/// The day rows `change` adds to, if it is an announced change of an agent.
pub fn rows_of(change: &RecordChange) -> Vec<UsageRow> {
    let Some(new) = change.new.as_ref() else {
        return Vec::new();
    };
    let Some(announced) = new.announced else {
        return Vec::new();
    };
    // A write that made no new version (the stream's old and new images alike) is no change.
    if change
        .old
        .as_ref()
        .is_some_and(|o| o.version == new.version)
    {
        return Vec::new();
    }
    let Some(at_s) = new.usage.map(|m| m.since_s) else {
        return Vec::new();
    };
    let before = change.old.as_ref().and_then(|o| o.usage);
    let usage = UsageChange {
        before: before.as_ref(),
        what: announced.what,
        trigger: announced.trigger,
        kept_snapshot: announced.what == Announce::Asleep && !new.snapshots.is_empty(),
        at_s,
    };
    let owner_key = new
        .description
        .owner_key
        .clone()
        .or_else(|| new.description.owner.clone())
        .unwrap_or_default();
    tally_change(&usage)
        .into_iter()
        .map(|(day, tally)| UsageRow {
            day,
            owner_key: owner_key.clone(),
            owner: new.description.owner.clone(),
            agent: new.key.clone(),
            tally,
        })
        .collect()
}

/// The id a change is added to rows under: the same as its event's `change_id`.
pub fn change_id(change: &RecordChange) -> Option<String> {
    let new = change.new.as_ref()?;
    Some(format!(
        "{}/{}/{}",
        new.key.kind, new.key.agent_id, new.version
    ))
}

/// Rows written at once: a row's add is one conditional `UpdateItem` and the batch's wait is
/// their sum one after the other (1,000 changes fell seconds behind the stream so).
const KEPT_AT_ONCE: usize = 16;

/// Add the usage of `changes`, [`KEPT_AT_ONCE`] rows at a time; [`Kept::failed_at`] names the
/// first change in order with a row not written. Changes after it that were written are handed
/// over again too, and their rows refuse them (each row remembers its changes): nothing is
/// counted twice.
pub async fn keep<S: UsageStore>(changes: &[RecordChange], store: &S) -> Kept {
    use futures::stream::{self, StreamExt};
    let rows: Vec<(&RecordChange, String, UsageRow)> = changes
        .iter()
        .filter_map(|change| Some((change, change_id(change)?)))
        .flat_map(|(change, id)| {
            let rows = rows_of(change);
            rows.into_iter().map(move |row| (change, id.clone(), row))
        })
        .collect();
    let writes: Vec<_> = rows
        .iter()
        .map(|(_, id, row)| store.add_usage(row, id))
        .collect();
    let written: Vec<_> = stream::iter(writes).buffered(KEPT_AT_ONCE).collect().await;
    let mut kept = Kept::default();
    for ((change, id, _), outcome) in rows.iter().zip(written) {
        match outcome {
            Ok(added) => kept.added += usize::from(added),
            Err(error) => {
                tracing::warn!(change_id = %id, %error, "usage not kept; it is handed over again");
                invocation::emit(Metric::of("usage").count("UsageFailed", 1));
                kept.failed_at = Some(change.sequence.clone());
                return kept;
            }
        }
    }
    kept
}
