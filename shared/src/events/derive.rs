//! The event a change of the table is, derived from the record the write left
//! (`AgentRecord::announced`). Other writes, removed items and non-agents announce nothing.

use crate::domain::failure::recorded_code;
use crate::domain::{AgentRecord, Announce, EventDetail, StateEvent};
use crate::store::RecordChange;

/// The event of the state change `record` was written as, if it was one.
pub fn event_of(record: &AgentRecord) -> Option<StateEvent> {
    let announced = record.announced?;
    let key = &record.key;
    let error_code = match announced.what {
        Announce::WakeFailed => record
            .error
            .as_deref()
            .map(|e| recorded_code(e).unwrap_or("WAKE_FAILED").to_string()),
        _ => None,
    };
    let (session_id, snapshot_id) = match announced.what {
        Announce::Awake | Announce::Created => (record.session_id.clone(), None),
        Announce::Asleep => (
            None,
            record.snapshots.first().map(|s| s.snapshot_id.clone()),
        ),
        Announce::WakeFailed => (None, record.snapshot_id.clone()),
        Announce::Deleted => (None, None),
    };
    Some(StateEvent {
        detail_type: announced.what.detail_type().to_string(),
        detail: EventDetail {
            kind: key.kind,
            agent_id: key.agent_id.clone(),
            owner: record.description.owner.clone(),
            session_id,
            snapshot_id,
            error_code,
            at: record
                .updated_at
                .clone()
                .unwrap_or_else(crate::ambient::now),
            trigger: announced.trigger,
            change_id: format!("{}/{}/{}", key.kind, key.agent_id, record.version),
        },
    })
}

/// The event `change` announces: its new record's, when the write made a new version.
pub fn derive(change: &RecordChange) -> Option<StateEvent> {
    let new = change.new.as_ref()?;
    if change
        .old
        .as_ref()
        .is_some_and(|old| old.version == new.version)
    {
        return None;
    }
    event_of(new)
}
