//! The table's items: attribute names, and reading items back into records and documents.
//!
//! The port's conditions and changes as DynamoDB expressions: every write is one `UpdateItem`
//! whose `ConditionExpression` checks and whose `UpdateExpression` writes, in one atomic step.

use crate::domain::usage::{UsageMark, WokenBy};
use crate::domain::{
    AgentKey, AgentRecord, Announce, Announcement, Description, Retention, ToolRegistry, WakeState,
};
use crate::store::port::IDLE_PK;
use crate::store::{port, Changes, Condition, Document, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::{HashMap, HashSet};

pub(super) use crate::store::table::attr;

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
    let key = port::parse_agent_pk(&pk)?;
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
        idle_minutes: get_n(item, attr::IDLE_MINUTES)?,
        // An agent record is in the index's idle partition only (docs/table.md).
        idle_at_ms: match get_s(item, attr::DUE_PK)? {
            Some(pk) if pk == IDLE_PK => get_n(item, attr::DUE_AT)?,
            _ => None,
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
        usage: mark_from_item(item)?,
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

/// An expression under construction: placeholders are registered as they are used, since
/// DynamoDB rejects a request that declares a name or value its expressions do not use.
#[derive(Default)]
pub(super) struct Expr {
    pub(super) names: HashMap<String, String>,
    pub(super) values: HashMap<String, AttributeValue>,
    set: Vec<String>,
    remove: Vec<String>,
    touched: HashSet<&'static str>,
}

impl Expr {
    pub(super) fn name(&mut self, attr: &str) -> String {
        let placeholder = format!("#{attr}");
        self.names.insert(placeholder.clone(), attr.to_string());
        placeholder
    }

    pub(super) fn value(&mut self, tag: &str, value: AttributeValue) -> String {
        let placeholder = format!(":{tag}");
        self.values.insert(placeholder.clone(), value);
        placeholder
    }

    pub(super) fn set(&mut self, attr: &'static str, value: AttributeValue) {
        let name = self.name(attr);
        let value = self.value(attr, value);
        self.set.push(format!("{name} = {value}"));
        self.touched.insert(attr);
    }

    pub(super) fn set_or_remove_s(&mut self, attr: &'static str, value: &Option<String>) {
        match value {
            Some(v) => self.set(attr, s(v)),
            None => self.remove(attr),
        }
    }

    /// `attr = if_not_exists(attr, 0) + 1`: a counter that a missing item starts at 0.
    pub(super) fn increment(&mut self, attr: &'static str) {
        let name = self.name(attr);
        let zero = self.value("zero", n(0));
        let one = self.value("one", n(1));
        self.set
            .push(format!("{name} = if_not_exists({name}, {zero}) + {one}"));
        self.touched.insert(attr);
    }

    pub(super) fn remove(&mut self, attr: &'static str) {
        let name = self.name(attr);
        self.remove.push(name);
        self.touched.insert(attr);
    }

    pub(super) fn update_expression(&self) -> String {
        let mut out = format!("SET {}", self.set.join(", "));
        if !self.remove.is_empty() {
            out.push_str(&format!(" REMOVE {}", self.remove.join(", ")));
        }
        out
    }
}

pub(super) fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

pub(super) fn n(v: impl std::fmt::Display) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// The condition, as a `ConditionExpression`. `Absent` admits an expired item the TTL sweeper
/// has not deleted yet (`expires_at < :now`), since reads already treat it as absent; the others
/// require a live item. `Held` checks holder *and* fence: one invocation may hold an agent twice
/// with one token (lease expired, acquired again), and the fence, bumped on every acquire, keeps
/// a delayed write of the first tenure out of the second. `WakingWith` and `SleepingWith` let
/// anyone complete, but only that wake or sleep.
pub(super) fn condition_expression(expr: &mut Expr, condition: &Condition, now: i64) -> String {
    let live = |expr: &mut Expr| {
        let exp = expr.name(attr::EXPIRES_AT);
        let now = expr.value("c_now", n(now));
        format!("(attribute_not_exists({exp}) OR {exp} >= {now})")
    };
    match condition {
        Condition::Absent | Condition::Version(0) => {
            let pk = expr.name(attr::PK);
            let exp = expr.name(attr::EXPIRES_AT);
            let now = expr.value("c_now", n(now));
            format!("attribute_not_exists({pk}) OR {exp} < {now}")
        }
        Condition::Version(v) => {
            let version = expr.name(attr::VERSION);
            let v = expr.value("c_version", n(v));
            format!("{version} = {v} AND {}", live(expr))
        }
        Condition::Held { holder, fence } => {
            let h = expr.name(attr::HOLDER);
            let f = expr.name(attr::FENCE);
            let hv = expr.value("c_holder", s(holder));
            let fv = expr.value("c_fence", n(fence));
            format!("{h} = {hv} AND {f} = {fv} AND {}", live(expr))
        }
        Condition::SleepingWith { fence, snapshot_id } => {
            let st = expr.name(attr::STATE);
            let f = expr.name(attr::FENCE);
            let snap = expr.name(attr::SNAPSHOT_ID);
            let stv = expr.value("c_state", s(WakeState::Sleeping.as_str()));
            let fv = expr.value("c_fence", n(fence));
            let sv = expr.value("c_snapshot", s(snapshot_id));
            format!(
                "{st} = {stv} AND {f} = {fv} AND {snap} = {sv} AND {}",
                live(expr)
            )
        }
        Condition::WakingWith { fence, session_id } => {
            let st = expr.name(attr::STATE);
            let f = expr.name(attr::FENCE);
            let sid = expr.name(attr::SESSION_ID);
            let stv = expr.value("c_state", s(WakeState::Waking.as_str()));
            let fv = expr.value("c_fence", n(fence));
            let sv = expr.value("c_session", s(session_id));
            format!(
                "{st} = {stv} AND {f} = {fv} AND {sid} = {sv} AND {}",
                live(expr)
            )
        }
    }
}

pub(super) fn update_expression(expr: &mut Expr, key: &AgentKey, creates: bool, changes: &Changes) {
    if let Some(state) = changes.state {
        expr.set(attr::STATE, s(state.as_str()));
    }
    if let Some(holder) = &changes.holder {
        expr.set_or_remove_s(attr::HOLDER, holder);
    }
    if changes.bump_fence {
        expr.increment(attr::FENCE);
    }
    if let Some(lease) = changes.lease_until_ms {
        expr.set(attr::LEASE_UNTIL_MS, n(lease));
    }
    if let Some(v) = &changes.snapshot_id {
        expr.set_or_remove_s(attr::SNAPSHOT_ID, v);
    }
    if let Some(v) = &changes.session_id {
        expr.set_or_remove_s(attr::SESSION_ID, v);
    }
    if let Some(v) = &changes.session_expire_at {
        expr.set_or_remove_s(attr::SESSION_EXPIRE_AT, v);
    }
    if let Some(v) = &changes.session_created_at {
        expr.set_or_remove_s(attr::SESSION_CREATED_AT, v);
    }
    if let Some(v) = changes.verified_at_ms {
        expr.set(attr::VERIFIED_AT_MS, n(v));
    }
    match changes.resume_sent_at_ms {
        Some(Some(t)) => expr.set(attr::RESUME_SENT_AT, n(t)),
        Some(None) => expr.remove(attr::RESUME_SENT_AT),
        None => {}
    }
    match changes.create_sent_at_ms {
        Some(Some(t)) => expr.set(attr::CREATE_SENT_AT, n(t)),
        Some(None) => expr.remove(attr::CREATE_SENT_AT),
        None => {}
    }
    if let Some(v) = changes.poll_until_ms {
        expr.set(attr::POLL_UNTIL_MS, n(v));
    }
    if let Some(v) = &changes.poller {
        expr.set_or_remove_s(attr::POLLER, v);
    }
    if let Some(v) = changes.awaited_since_ms {
        expr.set(attr::AWAITED_SINCE_MS, n(v));
    }
    match &changes.snapshots {
        Some(list) if list.is_empty() => expr.remove(attr::SNAPSHOTS),
        Some(list) => {
            // Serialising plain strings cannot fail.
            let json = serde_json::to_string(list).unwrap_or_default();
            expr.set(attr::SNAPSHOTS, s(&json));
        }
        None => {}
    }
    match &changes.schedule {
        Some(Some(summary)) => {
            let json = serde_json::to_string(summary).unwrap_or_default();
            expr.set(attr::SCHEDULE, s(&json));
        }
        Some(None) => expr.remove(attr::SCHEDULE),
        None => {}
    }
    match changes.idle_minutes {
        Some(Some(m)) => expr.set(attr::IDLE_MINUTES, n(m)),
        Some(None) => expr.remove(attr::IDLE_MINUTES),
        None => {}
    }
    match changes.idle_at() {
        Some(Some(at)) => {
            expr.set(attr::DUE_PK, s(IDLE_PK));
            expr.set(attr::DUE_AT, n(at));
        }
        Some(None) => {
            expr.remove(attr::DUE_PK);
            expr.remove(attr::DUE_AT);
        }
        None => {}
    }
    if let Some(v) = &changes.error {
        expr.set_or_remove_s(attr::ERROR, v);
    }
    match changes.expires_at {
        Some(Some(t)) => expr.set(attr::EXPIRES_AT, n(t)),
        Some(None) => expr.remove(attr::EXPIRES_AT),
        None => {}
    }
    if let Some(t) = changes.started_by {
        expr.set(attr::STARTED_BY, s(t.as_str()));
    }
    // Every write says whether it is a state change (`Changes::apply`).
    let now = crate::ambient::now();
    match changes.announce {
        Some(a) => {
            let now_s = crate::ambient::epoch_ms(&now).unwrap_or(0) / 1000;
            mark_expression(expr, a, now_s);
            expr.set(attr::ANNOUNCE, s(a.what.as_str()));
            expr.set(attr::TRIGGER, s(a.trigger.as_str()));
        }
        None => {
            expr.remove(attr::ANNOUNCE);
            expr.remove(attr::TRIGGER);
        }
    }

    let describe = changes.describe.clone().unwrap_or_default();
    for (name, value) in [
        (attr::OWNER, &describe.owner),
        (attr::OWNER_KEY, &describe.owner_key),
        (attr::DISPLAY_NAME, &describe.display_name),
        (attr::CREATED_BY, &describe.created_by),
        (attr::TOOL_ID, &describe.tool_id),
        (attr::REGION, &describe.region),
        (attr::CREATED_AT, &describe.created_at),
    ] {
        if let Some(v) = value {
            expr.set(name, s(v));
        }
    }
    if let Some(retention) = describe.retention {
        expr.set(attr::RETENTION, s(retention.as_str()));
    }

    // The owner index: `gsi1pk` follows `owner_key`; `gsi1sk` is kept as `<created_at or
    // NO_CREATED_AT>#<kind>#<agent_id>` on every item, so adding an owner key needs no
    // `created_at`: set when written, else kept (`if_not_exists` for items that had none).
    if let Some(owner_key) = &describe.owner_key {
        expr.set(attr::GSI1PK, s(&port::owner_gsi_pk(owner_key)));
    }
    let sk = port::owner_gsi_sk(describe.created_at.as_deref(), key);
    if describe.created_at.is_some() || creates {
        expr.set(attr::GSI1SK, s(&sk));
    } else {
        let name = expr.name(attr::GSI1SK);
        let value = expr.value(attr::GSI1SK, s(&sk));
        expr.set
            .push(format!("{name} = if_not_exists({name}, {value})"));
        expr.touched.insert(attr::GSI1SK);
    }

    expr.increment(attr::VERSION);
    expr.set(attr::UPDATED_AT, s(&now));

    if creates {
        for name in attr::CLEARED_ON_CREATE {
            if !expr.touched.contains(name) {
                expr.remove(name);
            }
        }
    }
}

/// The mark `announced` leaves, written at `now_s`: what `UsageMark::after` computes, with the
/// fields it keeps left as they are.
pub(super) fn mark_expression(expr: &mut Expr, announced: Announcement, now_s: u64) {
    match announced.what {
        Announce::Awake | Announce::Created => {
            expr.set(attr::USAGE_STATE, s("awake"));
            let by = WokenBy::of(announced.trigger);
            expr.set(attr::USAGE_BY, s(by.as_str()));
            expr.set(attr::REFERENCE_FROM, n(now_s));
        }
        Announce::Asleep | Announce::WakeFailed => expr.set(attr::USAGE_STATE, s("asleep")),
        Announce::Deleted => {
            expr.set(attr::USAGE_STATE, s("gone"));
            expr.remove(attr::REFERENCE_FROM);
        }
    }
    expr.set(attr::USAGE_SINCE, n(now_s));
}

/// The record's usage mark, if an announced write left one.
pub(super) fn mark_from_item(item: &Item) -> Result<Option<UsageMark>, StoreError> {
    let Some(state) = get_s(item, attr::USAGE_STATE)? else {
        return Ok(None);
    };
    let corrupt = |e: String| StoreError::Corrupt(format!("usage mark: {e}"));
    Ok(Some(UsageMark {
        resting: state.parse().map_err(corrupt)?,
        since_s: get_n(item, attr::USAGE_SINCE)?.unwrap_or(0),
        woken_by: get_s(item, attr::USAGE_BY)?
            .map(|b| b.parse())
            .transpose()
            .map_err(corrupt)?,
        reference_from_s: get_n(item, attr::REFERENCE_FROM)?,
    }))
}
