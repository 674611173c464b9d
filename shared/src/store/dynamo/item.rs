//! The table's items: attribute names, and reading items back into records and documents.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::domain::{AgentRecord, Announcement, Description, Retention, ToolRegistry, WakeState};
use crate::store::{keys, Document, StoreError};

/// Attribute names of the agent record item.
pub(super) mod attr {
    pub const PK: &str = "pk";
    pub const SK: &str = "sk";
    pub const GSI1PK: &str = "gsi1pk";
    pub const GSI1SK: &str = "gsi1sk";
    pub const OWNER: &str = "owner";
    pub const OWNER_KEY: &str = "owner_key";
    pub const DISPLAY_NAME: &str = "display_name";
    pub const CREATED_BY: &str = "created_by";
    pub const RETENTION: &str = "retention";
    pub const TOOL_ID: &str = "tool_id";
    pub const REGION: &str = "region";
    pub const CREATED_AT: &str = "created_at";
    pub const STATE: &str = "state";
    pub const HOLDER: &str = "holder";
    pub const FENCE: &str = "fence";
    pub const LEASE_UNTIL_MS: &str = "lease_until_ms";
    pub const SNAPSHOT_ID: &str = "snapshot_id";
    pub const SESSION_ID: &str = "session_id";
    pub const SESSION_EXPIRE_AT: &str = "session_expire_at";
    pub const SESSION_CREATED_AT: &str = "session_created_at";
    pub const VERIFIED_AT_MS: &str = "verified_at_ms";
    /// Epoch ms (N).
    pub const RESUME_SENT_AT: &str = "resume_sent_at";
    /// Epoch ms (N).
    pub const CREATE_SENT_AT: &str = "create_sent_at";
    pub const POLL_UNTIL_MS: &str = "poll_until_ms";
    pub const AWAITED_SINCE_MS: &str = "awaited_since_ms";
    pub const POLLER: &str = "poller";
    /// The snapshot summaries, as JSON (S).
    pub const SNAPSHOTS: &str = "snapshots";
    /// The schedule summary, as JSON (S).
    pub const SCHEDULE: &str = "schedule";
    pub const ERROR: &str = "error";
    pub const VERSION: &str = "version";
    pub const UPDATED_AT: &str = "updated_at";
    pub const EXPIRES_AT: &str = "expires_at";
    /// The state change the last write was (`Announce::as_str`), absent when none: the stream
    /// mapping's filter lets only the versions that carry it through.
    pub const ANNOUNCE: &str = "announce";
    /// What set that change off (`Trigger::as_str`).
    pub const TRIGGER: &str = "trigger";
    /// What set off the change an acquire started (`Trigger::as_str`).
    pub const STARTED_BY: &str = "started_by";
    pub const REGISTRY: &str = "registry";
    pub const DOC: &str = "doc";
    /// A schedule's sparse index keys (`by_due`), present only while it has something due.
    pub const DUE_PK: &str = "due_pk";
    pub const DUE_AT: &str = "due_at";
}

pub(super) type Item = HashMap<String, AttributeValue>;

pub(super) fn get_s(item: &Item, name: &str) -> Result<Option<String>, StoreError> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v.clone())),
        Some(other) => Err(StoreError::Corrupt(format!(
            "{name} is not a string: {other:?}"
        ))),
    }
}

pub(super) fn get_n<T: std::str::FromStr>(
    item: &Item,
    name: &str,
) -> Result<Option<T>, StoreError> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::N(v)) => v
            .parse()
            .map(Some)
            .map_err(|_| StoreError::Corrupt(format!("{name} is not a valid number: {v:?}"))),
        Some(other) => Err(StoreError::Corrupt(format!(
            "{name} is not a number: {other:?}"
        ))),
    }
}

/// An agent record item as a record. Missing wake fields read as an absent record's.
pub(super) fn record_from_item(item: &Item) -> Result<AgentRecord, StoreError> {
    let pk = get_s(item, attr::PK)?.ok_or_else(|| StoreError::Corrupt("item without pk".into()))?;
    let key = keys::parse_agent_pk(&pk)?;
    let corrupt = |e: String| StoreError::Corrupt(format!("{pk}: {e}"));
    let state = match get_s(item, attr::STATE)? {
        Some(v) => v.parse::<WakeState>().map_err(corrupt)?,
        None => WakeState::Asleep,
    };
    let retention = match get_s(item, attr::RETENTION)? {
        Some(v) => Some(v.parse::<Retention>().map_err(|e| corrupt(e.to_string()))?),
        None => None,
    };
    Ok(AgentRecord {
        key,
        description: Description {
            owner: get_s(item, attr::OWNER)?,
            owner_key: get_s(item, attr::OWNER_KEY)?,
            display_name: get_s(item, attr::DISPLAY_NAME)?,
            created_by: get_s(item, attr::CREATED_BY)?,
            retention,
            tool_id: get_s(item, attr::TOOL_ID)?,
            region: get_s(item, attr::REGION)?,
            created_at: get_s(item, attr::CREATED_AT)?,
        },
        state,
        holder: get_s(item, attr::HOLDER)?,
        fence: get_n(item, attr::FENCE)?.unwrap_or(0),
        lease_until_ms: get_n(item, attr::LEASE_UNTIL_MS)?.unwrap_or(0),
        snapshot_id: get_s(item, attr::SNAPSHOT_ID)?,
        session_id: get_s(item, attr::SESSION_ID)?,
        session_expire_at: get_s(item, attr::SESSION_EXPIRE_AT)?,
        session_created_at: get_s(item, attr::SESSION_CREATED_AT)?,
        verified_at_ms: get_n(item, attr::VERIFIED_AT_MS)?.unwrap_or(0),
        resume_sent_at_ms: get_n(item, attr::RESUME_SENT_AT)?,
        create_sent_at_ms: get_n(item, attr::CREATE_SENT_AT)?,
        poll_until_ms: get_n(item, attr::POLL_UNTIL_MS)?.unwrap_or(0),
        poller: get_s(item, attr::POLLER)?,
        awaited_since_ms: get_n(item, attr::AWAITED_SINCE_MS)?.unwrap_or(0),
        error: get_s(item, attr::ERROR)?,
        snapshots: match get_s(item, attr::SNAPSHOTS)? {
            Some(json) => serde_json::from_str(&json).map_err(|e| corrupt(e.to_string()))?,
            None => Vec::new(),
        },
        schedule: match get_s(item, attr::SCHEDULE)? {
            Some(json) => Some(serde_json::from_str(&json).map_err(|e| corrupt(e.to_string()))?),
            None => None,
        },
        version: get_n(item, attr::VERSION)?.unwrap_or(0),
        updated_at: get_s(item, attr::UPDATED_AT)?,
        expires_at: get_n(item, attr::EXPIRES_AT)?,
        started_by: get_s(item, attr::STARTED_BY)?
            .map(|t| t.parse())
            .transpose()
            .map_err(corrupt)?,
        announced: match get_s(item, attr::ANNOUNCE)? {
            Some(what) => Some(Announcement {
                what: what.parse().map_err(corrupt)?,
                trigger: get_s(item, attr::TRIGGER)?
                    .map(|t| t.parse())
                    .transpose()
                    .map_err(corrupt)?
                    .unwrap_or_default(),
            }),
            None => None,
        },
    })
}

pub(super) fn live_record(item: &Item, now: i64) -> Result<Option<AgentRecord>, StoreError> {
    let record = record_from_item(item)?;
    Ok((!record.is_expired(now)).then_some(record))
}

pub(super) fn document_from_item(item: &Item) -> Result<Document, StoreError> {
    let json = get_s(item, attr::DOC)?
        .ok_or_else(|| StoreError::Corrupt("document item without doc".into()))?;
    Ok(Document {
        value: serde_json::from_str(&json)
            .map_err(|e| StoreError::Corrupt(format!("document: {e}")))?,
        version: get_n(item, attr::VERSION)?.unwrap_or(0),
        expires_at: get_n(item, attr::EXPIRES_AT)?,
    })
}

/// The document of `item` if it is live at `now` (TTL deletion is lazy).
pub(super) fn live_document(item: Option<&Item>, now: i64) -> Result<Option<Document>, StoreError> {
    Ok(item
        .map(document_from_item)
        .transpose()?
        .filter(|d| d.expires_at.is_none_or(|t| t >= now)))
}

pub(super) fn registry_from_item(item: &Item) -> Result<ToolRegistry, StoreError> {
    let json = get_s(item, attr::REGISTRY)?
        .ok_or_else(|| StoreError::Corrupt("registry item without registry".into()))?;
    let mut registry: ToolRegistry =
        serde_json::from_str(&json).map_err(|e| StoreError::Corrupt(format!("registry: {e}")))?;
    // The attribute is what the CAS compares, so it is the truth.
    registry.version = get_n(item, attr::VERSION)?.unwrap_or(0);
    Ok(registry)
}

/// Add the live records among `items` to `records` until it holds `limit`, calling `taken`
/// with each item taken. `true`: a live record was left over, so more follow this page.
pub(super) fn take_live(
    items: &[Item],
    now: i64,
    limit: usize,
    records: &mut Vec<AgentRecord>,
    mut taken: impl FnMut(&Item),
) -> Result<bool, StoreError> {
    for item in items {
        let Some(record) = live_record(item, now)? else {
            continue;
        };
        if records.len() == limit {
            return Ok(true);
        }
        records.push(record);
        taken(item);
    }
    Ok(false)
}
