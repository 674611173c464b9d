//! The DynamoDB adapter: the store port over one table (wake-protocol.md), used in production
//! and, through `AWS_ENDPOINT_URL`, against DynamoDB Local in the tests.
//!
//! Every write is a single `UpdateItem` (or `PutItem` for the registry) whose
//! `ConditionExpression` is the port's [`Condition`], so check and write are one atomic step
//! on the server; there is no read-modify-write anywhere. The store, not the caller, computes
//! `version + 1` and `fence + 1` in the update expression, so two writers can never both
//! write the same next version.
//!
//! Attribute names always go through `#placeholders`: `state`, `owner`, `name`... are or may be
//! DynamoDB reserved words, and a placeholder costs nothing.
//!
//! Expiry: DynamoDB's TTL deletes lazily (up to days late) and DynamoDB Local never does, so
//! `expires_at < now` is checked on every read and inside every condition; an expired item is
//! treated exactly like a missing one.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;

use super::keys::{self, OwnerCursor};
use super::{
    AgentPage, AgentStore, Changes, Condition, Document, DocumentKey, OwnerPage, StoreError,
};
use crate::domain::{AgentKey, AgentRecord, Kind, Retention, ToolRegistry, WakeState};
use crate::timestamp::now_s;

/// Attribute names of the agent record item.
mod attr {
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
    pub const VERIFIED_AT_MS: &str = "verified_at_ms";
    /// Epoch ms (N).
    pub const RESUME_SENT_AT: &str = "resume_sent_at";
    pub const POLL_UNTIL_MS: &str = "poll_until_ms";
    /// The snapshot summaries, as JSON (S).
    pub const SNAPSHOTS: &str = "snapshots";
    pub const ERROR: &str = "error";
    pub const VERSION: &str = "version";
    pub const UPDATED_AT: &str = "updated_at";
    pub const EXPIRES_AT: &str = "expires_at";
    /// The registry item's JSON.
    pub const REGISTRY: &str = "registry";
    /// A document item's JSON.
    pub const DOC: &str = "doc";
}

/// Everything of a record that a create (an `Absent` write) must clear when it replaces an
/// expired item: all fields but the two counters, which carry on.
const CLEARED_ON_CREATE: [&str; 21] = [
    attr::OWNER,
    attr::OWNER_KEY,
    attr::DISPLAY_NAME,
    attr::CREATED_BY,
    attr::RETENTION,
    attr::TOOL_ID,
    attr::REGION,
    attr::CREATED_AT,
    attr::STATE,
    attr::HOLDER,
    attr::LEASE_UNTIL_MS,
    attr::SNAPSHOT_ID,
    attr::SESSION_ID,
    attr::SESSION_EXPIRE_AT,
    attr::VERIFIED_AT_MS,
    attr::RESUME_SENT_AT,
    attr::POLL_UNTIL_MS,
    attr::SNAPSHOTS,
    attr::ERROR,
    attr::EXPIRES_AT,
    attr::GSI1PK,
];

/// The store over one DynamoDB table. Cheap to clone (the SDK client is reference-counted).
#[derive(Clone, Debug)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoStore {
            client,
            table: table.into(),
        }
    }

    /// A store over `table` with a client from `config` (load it once per cold start and share
    /// it between clients).
    pub fn from_conf(config: &aws_config::SdkConfig, table: impl Into<String>) -> Self {
        Self::new(Client::new(config), table)
    }

    /// A store over `table` with the SDK's default credential, region and endpoint chain
    /// (`AWS_ENDPOINT_URL` points it at DynamoDB Local).
    ///
    /// Timeouts are explicit because the SDK's defaults have none per attempt: a request that
    /// hangs would eat the whole Lambda budget (API Gateway cuts at 30 s). An attempt gets
    /// 3 s, the whole call with the SDK's retries 8 s; a timed-out write is
    /// [`StoreError::Unavailable`], which callers treat as ambiguous.
    pub async fn from_env(table: impl Into<String>) -> Self {
        let config = aws_config::defaults(BehaviorVersion::latest())
            .timeout_config(
                aws_config::timeout::TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(2))
                    .operation_attempt_timeout(Duration::from_secs(3))
                    .operation_timeout(Duration::from_secs(8))
                    .build(),
            )
            .load()
            .await;
        Self::from_conf(&config, table)
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}

/// Any SDK failure that is not a failed condition: unreachable, timed out, throttled, 5xx, or
/// an error the service answered. All of them read as "the store could not do it"; for a write
/// the caller must assume it may have been applied.
fn unavailable<E, R>(op: &str, err: &SdkError<E, R>) -> StoreError
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    StoreError::Unavailable(format!("{op}: {}", DisplayErrorContext(err)))
}

/// An expression under construction: placeholders are registered as they are used, since
/// DynamoDB rejects a request that declares a name or value its expressions do not use.
#[derive(Default)]
struct Expr {
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
    set: Vec<String>,
    remove: Vec<String>,
    touched: HashSet<&'static str>,
}

impl Expr {
    fn name(&mut self, attr: &str) -> String {
        let placeholder = format!("#{attr}");
        self.names.insert(placeholder.clone(), attr.to_string());
        placeholder
    }

    fn value(&mut self, tag: &str, value: AttributeValue) -> String {
        let placeholder = format!(":{tag}");
        self.values.insert(placeholder.clone(), value);
        placeholder
    }

    fn set(&mut self, attr: &'static str, value: AttributeValue) {
        let name = self.name(attr);
        let value = self.value(attr, value);
        self.set.push(format!("{name} = {value}"));
        self.touched.insert(attr);
    }

    fn set_or_remove_s(&mut self, attr: &'static str, value: &Option<String>) {
        match value {
            Some(v) => self.set(attr, s(v)),
            None => self.remove(attr),
        }
    }

    /// `attr = if_not_exists(attr, 0) + 1`: a counter that a missing item starts at 0.
    fn increment(&mut self, attr: &'static str) {
        let name = self.name(attr);
        let zero = self.value("zero", n(0));
        let one = self.value("one", n(1));
        self.set
            .push(format!("{name} = if_not_exists({name}, {zero}) + {one}"));
        self.touched.insert(attr);
    }

    fn remove(&mut self, attr: &'static str) {
        let name = self.name(attr);
        self.remove.push(name);
        self.touched.insert(attr);
    }

    fn update_expression(&self) -> String {
        let mut out = format!("SET {}", self.set.join(", "));
        if !self.remove.is_empty() {
            out.push_str(&format!(" REMOVE {}", self.remove.join(", ")));
        }
        out
    }
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

fn n(v: impl std::fmt::Display) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// The condition, as a `ConditionExpression`. The reasons, one by one:
///
/// - `Absent`: `attribute_not_exists(pk)` is DynamoDB's "no item"; `OR expires_at < :now`
///   admits an expired tombstone the TTL sweeper has not deleted yet, since every read already
///   treats it as absent and a caller that read "absent" must be able to create.
/// - `Version(v)`: the CAS of an acquire or an `If-Match`; `Version(0)` is what an absent
///   record reads as, so it is `Absent`.
/// - `Held`: holder *and* fence. Holder tokens are random per invocation, but one invocation
///   may hold the same agent twice (its lease expired, it acquired again with the same token);
///   the fence, bumped on every acquire, tells the two tenures apart, so a delayed write from
///   the first can never land in the second, and a stale holder always fails.
/// - `SleepingWith`: the same for a sleep, by the snapshot it waits for.
/// - `WakingWith`: anyone who saw the recorded session Ready may complete, but only that
///   wake: a later acquire bumps the fence, and a different session would be a different wake.
///
/// The last three also require a live item (`expires_at` missing or not yet passed): an
/// expired record is absent, and nothing but a create may write to an absent record.
fn condition_expression(expr: &mut Expr, condition: &Condition, now: i64) -> String {
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

/// The update expression of `changes` on `key`.
fn update_expression(expr: &mut Expr, key: &AgentKey, creates: bool, changes: &Changes) {
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
    if let Some(v) = changes.verified_at_ms {
        expr.set(attr::VERIFIED_AT_MS, n(v));
    }
    match changes.resume_sent_at_ms {
        Some(Some(t)) => expr.set(attr::RESUME_SENT_AT, n(t)),
        Some(None) => expr.remove(attr::RESUME_SENT_AT),
        None => {}
    }
    if let Some(v) = changes.poll_until_ms {
        expr.set(attr::POLL_UNTIL_MS, n(v));
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
    if let Some(v) = &changes.error {
        expr.set_or_remove_s(attr::ERROR, v);
    }
    match changes.expires_at {
        Some(Some(t)) => expr.set(attr::EXPIRES_AT, n(t)),
        Some(None) => expr.remove(attr::EXPIRES_AT),
        None => {}
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

    // The owner index. `gsi1pk` follows `owner_key`. `gsi1sk` is kept equal to
    // `<created_at or NO_CREATED_AT>#<kind>#<agent_id>` on every item, indexed or not, so a
    // write that adds an owner key to an existing record need not know its `created_at`:
    // - a write that sets `created_at` sets `gsi1sk` from it;
    // - a create sets it from its own `created_at` or the fallback (an expired item's
    //   `created_at` is cleared with everything else);
    // - any other write keeps the existing one (`if_not_exists` covers items written before
    //   this rule, which had none).
    if let Some(owner_key) = &describe.owner_key {
        expr.set(attr::GSI1PK, s(&keys::owner_gsi_pk(owner_key)));
    }
    let sk = keys::owner_gsi_sk(describe.created_at.as_deref(), key);
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
    expr.set(attr::UPDATED_AT, s(&crate::timestamp::now()));

    if creates {
        for name in CLEARED_ON_CREATE {
            if !expr.touched.contains(name) {
                expr.remove(name);
            }
        }
    }
}

/// The smallest `Limit` of one owner-index query round.
const MIN_QUERY_LIMIT: usize = 25;

type Item = HashMap<String, AttributeValue>;

fn get_s(item: &Item, name: &str) -> Result<Option<String>, StoreError> {
    match item.get(name) {
        None | Some(AttributeValue::Null(_)) => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v.clone())),
        Some(other) => Err(StoreError::Corrupt(format!(
            "{name} is not a string: {other:?}"
        ))),
    }
}

fn get_n<T: std::str::FromStr>(item: &Item, name: &str) -> Result<Option<T>, StoreError> {
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
fn record_from_item(item: &Item) -> Result<AgentRecord, StoreError> {
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
        owner: get_s(item, attr::OWNER)?,
        owner_key: get_s(item, attr::OWNER_KEY)?,
        display_name: get_s(item, attr::DISPLAY_NAME)?,
        created_by: get_s(item, attr::CREATED_BY)?,
        retention,
        tool_id: get_s(item, attr::TOOL_ID)?,
        region: get_s(item, attr::REGION)?,
        created_at: get_s(item, attr::CREATED_AT)?,
        state,
        holder: get_s(item, attr::HOLDER)?,
        fence: get_n(item, attr::FENCE)?.unwrap_or(0),
        lease_until_ms: get_n(item, attr::LEASE_UNTIL_MS)?.unwrap_or(0),
        snapshot_id: get_s(item, attr::SNAPSHOT_ID)?,
        session_id: get_s(item, attr::SESSION_ID)?,
        session_expire_at: get_s(item, attr::SESSION_EXPIRE_AT)?,
        verified_at_ms: get_n(item, attr::VERIFIED_AT_MS)?.unwrap_or(0),
        resume_sent_at_ms: get_n(item, attr::RESUME_SENT_AT)?,
        poll_until_ms: get_n(item, attr::POLL_UNTIL_MS)?.unwrap_or(0),
        error: get_s(item, attr::ERROR)?,
        snapshots: match get_s(item, attr::SNAPSHOTS)? {
            Some(json) => serde_json::from_str(&json).map_err(|e| corrupt(e.to_string()))?,
            None => Vec::new(),
        },
        version: get_n(item, attr::VERSION)?.unwrap_or(0),
        updated_at: get_s(item, attr::UPDATED_AT)?,
        expires_at: get_n(item, attr::EXPIRES_AT)?,
    })
}

/// The live record of an item (`None` when it has expired).
fn live_record(item: &Item, now: i64) -> Result<Option<AgentRecord>, StoreError> {
    let record = record_from_item(item)?;
    Ok((!record.is_expired(now)).then_some(record))
}

fn document_from_item(item: &Item) -> Result<Document, StoreError> {
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
fn live_document(item: Option<&Item>, now: i64) -> Result<Option<Document>, StoreError> {
    Ok(item
        .map(document_from_item)
        .transpose()?
        .filter(|d| d.expires_at.is_none_or(|t| t >= now)))
}

fn registry_from_item(item: &Item) -> Result<ToolRegistry, StoreError> {
    let json = get_s(item, attr::REGISTRY)?
        .ok_or_else(|| StoreError::Corrupt("registry item without registry".into()))?;
    let mut registry: ToolRegistry =
        serde_json::from_str(&json).map_err(|e| StoreError::Corrupt(format!("registry: {e}")))?;
    // The attribute is what the CAS compares, so it is the truth.
    registry.version = get_n(item, attr::VERSION)?.unwrap_or(0);
    Ok(registry)
}

impl DynamoStore {
    fn agent_key_attrs(key: &AgentKey) -> Item {
        HashMap::from([
            (attr::PK.to_string(), s(&keys::agent_pk(key))),
            (attr::SK.to_string(), s(keys::AGENT_SK)),
        ])
    }

    fn registry_key_attrs() -> Item {
        HashMap::from([
            (attr::PK.to_string(), s(keys::REGISTRY_PK)),
            (attr::SK.to_string(), s(keys::REGISTRY_SK)),
        ])
    }
}

impl AgentStore for DynamoStore {
    async fn get(&self, key: &AgentKey) -> Result<Option<AgentRecord>, StoreError> {
        // Consistent: a caller deciding whether to acquire must see the latest write (an
        // eventually consistent read could show a released lock as still held, or the reverse).
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::agent_key_attrs(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("GetItem", &e))?;
        match out.item() {
            Some(item) => live_record(item, now_s()),
            None => Ok(None),
        }
    }

    async fn update(
        &self,
        key: &AgentKey,
        condition: &Condition,
        changes: &Changes,
    ) -> Result<AgentRecord, StoreError> {
        let now = now_s();
        let creates = matches!(condition, Condition::Absent | Condition::Version(0));
        let mut expr = Expr::default();
        let condition_expression = condition_expression(&mut expr, condition, now);
        update_expression(&mut expr, key, creates, changes);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::agent_key_attrs(key)))
            .update_expression(expr.update_expression())
            .condition_expression(condition_expression)
            .set_expression_attribute_names(Some(expr.names))
            .set_expression_attribute_values(Some(expr.values))
            // The record as written: the caller learns its new version and fence without a read.
            .return_values(ReturnValue::AllNew)
            // The record as it was when the condition failed: a loser decides again in the
            // same round trip, with no window between a failed write and a re-read.
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => {
                let item = out.attributes().ok_or_else(|| {
                    StoreError::Corrupt("UpdateItem answered no attributes".into())
                })?;
                record_from_item(item)
            }
            Err(err) => {
                if let Some(UpdateItemError::ConditionalCheckFailedException(e)) =
                    err.as_service_error()
                {
                    // No item, or an expired one: the record is absent.
                    let current = match e.item() {
                        Some(item) => live_record(item, now)?,
                        None => None,
                    };
                    return Err(StoreError::ConditionFailed {
                        current: current.map(Box::new),
                    });
                }
                Err(unavailable("UpdateItem", &err))
            }
        }
    }

    async fn query_owner(
        &self,
        owner_key: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<OwnerPage, StoreError> {
        let limit = limit.max(1) as usize;
        let mut start = cursor
            .map(|c| OwnerCursor::decode(c, owner_key))
            .transpose()?
            .map(|c| {
                HashMap::from([
                    (attr::PK.to_string(), s(&c.pk)),
                    (attr::SK.to_string(), s(&c.sk)),
                    (attr::GSI1PK.to_string(), s(&c.gsi1pk)),
                    (attr::GSI1SK.to_string(), s(&c.gsi1sk)),
                ])
            });
        let now = now_s();
        let mut records = Vec::new();
        let mut last_item: Option<Item> = None;
        let mut more = false;
        // Expired tombstones are in the index until the TTL sweeper deletes them, so a query
        // page may hold fewer live records than asked for: query again from where it stopped.
        // Each round asks for one more than still needed, so that "more follow" is known
        // without an extra empty page; the cursor is then built from the last record
        // returned, never from DynamoDB's `LastEvaluatedKey` (which may lie past records
        // this page did not return).
        'pages: loop {
            // At least a few dozen, so that a run of tombstones costs few round trips;
            // reading past the page is harmless since the cursor never comes from DynamoDB.
            let want = (limit - records.len() + 1).max(MIN_QUERY_LIMIT);
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(keys::OWNER_INDEX)
                .key_condition_expression("#gsi1pk = :gsi1pk")
                .expression_attribute_names("#gsi1pk", attr::GSI1PK)
                .expression_attribute_values(":gsi1pk", s(&keys::owner_gsi_pk(owner_key)))
                .scan_index_forward(false)
                .limit(i32::try_from(want).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable("Query", &e))?;
            for item in out.items() {
                let Some(record) = live_record(item, now)? else {
                    continue;
                };
                if records.len() == limit {
                    more = true;
                    break 'pages;
                }
                records.push(record);
                last_item = Some(item.clone());
            }
            match out.last_evaluated_key() {
                Some(lek) if !lek.is_empty() => start = Some(lek.clone()),
                _ => break,
            }
        }
        let cursor = match (more, last_item) {
            (true, Some(item)) => {
                let field = |name: &str| {
                    get_s(&item, name)?
                        .ok_or_else(|| StoreError::Corrupt(format!("index item without {name}")))
                };
                Some(
                    OwnerCursor {
                        pk: field(attr::PK)?,
                        sk: field(attr::SK)?,
                        gsi1pk: field(attr::GSI1PK)?,
                        gsi1sk: field(attr::GSI1SK)?,
                    }
                    .encode(),
                )
            }
            _ => None,
        };
        Ok(OwnerPage { records, cursor })
    }

    async fn scan_agents(
        &self,
        kind: Option<Kind>,
        limit: u32,
        after: Option<&AgentKey>,
    ) -> Result<AgentPage, StoreError> {
        let limit = limit.max(1) as usize;
        let prefix = match kind {
            Some(k) => format!("AGENT#{k}#"),
            None => "AGENT#".to_string(),
        };
        let mut start = after.map(Self::agent_key_attrs);
        let now = now_s();
        let mut records = Vec::new();
        let mut more = false;
        // A Scan's `Limit` counts items read, before the filter drops the table's other items
        // (idempotency documents, locks, the registry) and expired records: read on until the
        // page is full. The next page starts after the last record returned, never at
        // DynamoDB's `LastEvaluatedKey` (which may lie past records this page did not return).
        'pages: loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("begins_with(#pk, :prefix)")
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_values(":prefix", s(&prefix))
                .limit(
                    i32::try_from((limit - records.len() + 1).max(MIN_QUERY_LIMIT))
                        .unwrap_or(i32::MAX),
                )
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable("Scan", &e))?;
            for item in out.items() {
                let Some(record) = live_record(item, now)? else {
                    continue;
                };
                if records.len() == limit {
                    more = true;
                    break 'pages;
                }
                records.push(record);
            }
            match out.last_evaluated_key() {
                // A full page stops at the end of its batch rather than read the rest of the
                // table to learn whether one more agent follows (the next page may then be
                // empty: the last one).
                Some(lek) if !lek.is_empty() && records.len() == limit => {
                    more = true;
                    break;
                }
                Some(lek) if !lek.is_empty() => start = Some(lek.clone()),
                _ => break,
            }
        }
        let next = if more {
            records.last().map(|r: &AgentRecord| r.key.clone())
        } else {
            None
        };
        Ok(AgentPage { records, next })
    }

    async fn get_registry(&self) -> Result<Option<ToolRegistry>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::registry_key_attrs()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("GetItem", &e))?;
        out.item().map(registry_from_item).transpose()
    }

    async fn put_registry(
        &self,
        registry: &ToolRegistry,
        expected_version: u64,
    ) -> Result<ToolRegistry, StoreError> {
        let mut written = registry.clone();
        written.version = expected_version + 1;
        let json = serde_json::to_string(&written)
            .map_err(|e| StoreError::Corrupt(format!("registry: {e}")))?;
        let mut item = Self::registry_key_attrs();
        item.insert(attr::REGISTRY.to_string(), s(&json));
        item.insert(attr::VERSION.to_string(), n(written.version));
        // Deploy runs on a schedule and by hand: two deploys racing must not both write, and
        // the loser must not overwrite the winner's Tool ids with its older view.
        let request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let request = if expected_version == 0 {
            request
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", attr::PK)
        } else {
            request
                .condition_expression("#version = :expected")
                .expression_attribute_names("#version", attr::VERSION)
                .expression_attribute_values(":expected", n(expected_version))
        };
        match request.send().await {
            Ok(_) => Ok(written),
            Err(err) => {
                if let Some(PutItemError::ConditionalCheckFailedException(e)) =
                    err.as_service_error()
                {
                    let current = e.item().map(registry_from_item).transpose()?;
                    return Err(StoreError::RegistryConflict {
                        current: current.map(Box::new),
                    });
                }
                Err(unavailable("PutItem", &err))
            }
        }
    }

    async fn get_document(&self, key: DocumentKey<'_>) -> Result<Option<Document>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.pk))
            .key(attr::SK, s(key.sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("GetItem", &e))?;
        live_document(out.item(), now_s())
    }

    async fn put_document(
        &self,
        key: DocumentKey<'_>,
        value: &serde_json::Value,
        expected_version: u64,
        expires_at: Option<i64>,
    ) -> Result<Document, StoreError> {
        let json = serde_json::to_string(value)
            .map_err(|e| StoreError::Corrupt(format!("document: {e}")))?;
        let now = now_s();
        // One UpdateItem: the version is incremented by DynamoDB itself, so an expired
        // document's version carries on and a stale writer can never reuse a number.
        let mut update =
            "SET #doc = :doc, #version = if_not_exists(#version, :zero) + :one".to_string();
        update.push_str(if expires_at.is_some() {
            ", #expires_at = :expires_at"
        } else {
            " REMOVE #expires_at"
        });
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.pk))
            .key(attr::SK, s(key.sk))
            .update_expression(update)
            .expression_attribute_names("#doc", attr::DOC)
            .expression_attribute_names("#version", attr::VERSION)
            .expression_attribute_names("#expires_at", attr::EXPIRES_AT)
            .expression_attribute_values(":doc", s(&json))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Some(t) = expires_at {
            request = request.expression_attribute_values(":expires_at", n(t));
        }
        request = if expected_version == 0 {
            // Absent, or present but expired: TTL deletion is lazy, so an expired document
            // still physically there must not block a new one.
            request
                .condition_expression("attribute_not_exists(#pk) OR #expires_at < :now")
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_values(":now", n(now))
        } else {
            request
                .condition_expression(
                    "#version = :expected AND (attribute_not_exists(#expires_at) OR #expires_at >= :now)",
                )
                .expression_attribute_values(":expected", n(expected_version))
                .expression_attribute_values(":now", n(now))
        };
        match request.send().await {
            Ok(out) => out
                .attributes()
                .map(document_from_item)
                .transpose()?
                .ok_or_else(|| StoreError::Corrupt("UpdateItem answered no attributes".into())),
            Err(err) => {
                if let Some(UpdateItemError::ConditionalCheckFailedException(e)) =
                    err.as_service_error()
                {
                    return Err(StoreError::DocumentConflict {
                        current: live_document(e.item(), now)?.map(Box::new),
                    });
                }
                Err(unavailable("UpdateItem", &err))
            }
        }
    }
}
