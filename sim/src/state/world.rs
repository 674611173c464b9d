//! The world itself: its fields, ids, the index primitives and expiry.

use snapwake::agentkit::types::Secret;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use time::OffsetDateTime;

use super::records::{ns, std_to_time, SessRec, SnapRec, ToolRec, REASON_EXPIRED};
use crate::pagination::Key;

/// How long the snapshot of an expired session stays `Creating` by default: AgentKit takes a
/// few seconds to save a workspace.
pub const DEFAULT_EXPIRY_SNAPSHOT_DELAY: Duration = Duration::from_secs(3);

pub(super) fn index_insert(index: &mut HashMap<String, BTreeSet<Key>>, by: &str, key: Key) {
    index.entry(by.to_string()).or_default().insert(key);
}

pub(super) fn index_remove(index: &mut HashMap<String, BTreeSet<Key>>, by: &str, key: &Key) {
    if let Some(set) = index.get_mut(by) {
        set.remove(key);
        if set.is_empty() {
            index.remove(by);
        }
    }
}

/// Everything the simulated AgentKit holds.
#[derive(Debug)]
pub(crate) struct World {
    pub(crate) tools: HashMap<String, ToolRec>,
    pub(crate) tools_by_region: HashMap<String, BTreeSet<Key>>,
    pub(crate) sessions: HashMap<String, SessRec>,
    pub(crate) sessions_by_tool: HashMap<String, BTreeSet<Key>>,
    /// `(expire_at ns, session id)`, so [`World::tick`] only touches what expires.
    pub(super) expiries: BTreeSet<Key>,
    pub(crate) snapshots: HashMap<String, SnapRec>,
    pub(crate) snapshots_by_tool: HashMap<String, BTreeSet<Key>>,
    pub(crate) snapshots_by_usid: HashMap<String, BTreeSet<Key>>,
    pub(crate) session_ready_delay: Duration,
    pub(crate) tool_ready_delay: Duration,
    /// How long a snapshot taken on request stays `Creating`.
    pub(crate) snapshot_ready_delay: Duration,
    /// The status a snapshot taken on request reaches after the delay (`Ready`, or a failure
    /// to test with).
    pub(crate) snapshot_outcome: String,
    /// How long the snapshot of an expired session stays `Creating` after its ExpireAt.
    pub(crate) expiry_snapshot_delay: Duration,
    /// How long after its ExpireAt that snapshot is missing from listings.
    pub(crate) expiry_snapshot_hidden: Duration,
    /// The status that snapshot reaches after the delay (`Ready`, or `Failed`).
    pub(crate) expiry_snapshot_outcome: String,
    /// How many of the next sessions started stay `Starting` forever.
    pub(crate) stuck_sessions: u32,
    /// Whether `CreateTimeAfter` / `CreateTimeBefore` include their bound (AgentKit does not
    /// document it; exclusive unless a test asks for the other reading).
    pub(crate) inclusive_time_filters: bool,
    /// Resumes per snapshot id (kept after the snapshot is deleted).
    pub(crate) resumes: BTreeMap<String, u64>,
    ids: StdRng,
}

impl World {
    pub(crate) fn new(
        seed: u64,
        session_ready_delay: Duration,
        tool_ready_delay: Duration,
    ) -> Self {
        World {
            tools: HashMap::new(),
            tools_by_region: HashMap::new(),
            sessions: HashMap::new(),
            sessions_by_tool: HashMap::new(),
            expiries: BTreeSet::new(),
            snapshots: HashMap::new(),
            snapshots_by_tool: HashMap::new(),
            snapshots_by_usid: HashMap::new(),
            session_ready_delay,
            tool_ready_delay,
            snapshot_ready_delay: Duration::ZERO,
            snapshot_outcome: "Ready".into(),
            expiry_snapshot_delay: DEFAULT_EXPIRY_SNAPSHOT_DELAY,
            expiry_snapshot_hidden: Duration::ZERO,
            expiry_snapshot_outcome: "Ready".into(),
            stuck_sessions: 0,
            inclusive_time_filters: false,
            resumes: BTreeMap::new(),
            ids: StdRng::seed_from_u64(seed),
        }
    }

    /// Apply every expiry due by `now`: a session on a recoverable Tool that was still active
    /// becomes a snapshot (`Reason: Expired`, CreatedAt = its ExpireAt), `Creating` until
    /// ExpireAt + the expiry snapshot delay and then the expiry snapshot outcome (`Ready`), and
    /// missing from listings until ExpireAt + the hidden time; otherwise it vanishes. Times are
    /// reckoned from the ExpireAt, not from when the expiry is applied, so a clock jumped far
    /// past it finds the snapshot finished. Whether the Tool is recoverable is read when the
    /// expiry is applied.
    pub(crate) fn tick(&mut self, now: OffsetDateTime) {
        let now_ns = ns(now);
        while let Some(first) = self.expiries.first() {
            if first.0 > now_ns {
                break;
            }
            let Some((_, id)) = self.expiries.pop_first() else {
                break;
            };
            let Some(s) = self.remove_session(&id) else {
                continue;
            };
            let recoverable = self
                .tools
                .get(&s.tool_id)
                .is_some_and(|t| t.enable_snapshot);
            if recoverable && s.is_active(s.expire_at) {
                let snap = SnapRec {
                    id: self.fresh_id("snap"),
                    session_id: Some(s.id.clone()),
                    user_session_id: s.user_session_id.clone(),
                    sandbox_id: Some(format!("sbx-{}", s.id.trim_start_matches("sess-"))),
                    tool_id: s.tool_id.clone(),
                    status: self.expiry_snapshot_outcome.clone(),
                    ready_at: Some(s.expire_at + std_to_time(self.expiry_snapshot_delay)),
                    reason: Some(REASON_EXPIRED.into()),
                    created_at: s.expire_at,
                    metadata: s.metadata,
                    snapshot_type: None,
                    visible_at: (!self.expiry_snapshot_hidden.is_zero())
                        .then(|| s.expire_at + std_to_time(self.expiry_snapshot_hidden)),
                };
                tracing::debug!(session = %s.id, snapshot = %snap.id, "sim: session expired into a snapshot");
                self.insert_snapshot(snap);
            } else {
                tracing::debug!(session = %s.id, "sim: session expired");
            }
        }
    }

    /// A fresh id `prefix-<12 hex>` unused by any object (repeatable for one seed).
    pub(crate) fn fresh_id(&mut self, prefix: &str) -> String {
        loop {
            let id = format!("{prefix}-{:012x}", self.ids.gen::<u64>() & 0xffff_ffff_ffff);
            if !self.id_taken(&id) {
                return id;
            }
        }
    }

    pub(super) fn id_taken(&self, id: &str) -> bool {
        self.tools.contains_key(id)
            || self.sessions.contains_key(id)
            || self.snapshots.contains_key(id)
    }

    /// A fake session endpoint carrying an auth query string, like the real one.
    pub(crate) fn endpoint_for(&mut self, session_id: &str) -> Secret {
        let a: u128 = self.ids.gen();
        Secret::new(format!(
            "https://{session_id}.sandbox.example/?auth={a:032x}"
        ))
    }
}
