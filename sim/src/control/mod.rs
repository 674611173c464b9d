//! [`SimControl`]: the in-process handle on a simulator, for tests and the control surface
//! (`http.rs` serves the same operations as unsigned JSON under `/_sim/`). It moves the clock,
//! seeds objects, changes settings, injects faults, and reads counters and objects back.

pub(crate) mod http;

use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;

use crate::actions;
use crate::config::SimConfig;
use crate::counters::Counters;
use crate::error::SimError;
use crate::faults::Fault;
use crate::limits::RateLimits;
use crate::shared::Shared;
use crate::state::{SeedSession, SeedSnapshot, SeedTool};
use snapwake::agentkit::types;
use snapwake::agentkit::Credentials;

/// The handle tests (and the control surface) use: cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct SimControl(pub(crate) Arc<Shared>);

impl SimControl {
    /// A simulator's state without a server (serve it with [`router`](crate::router)).
    pub fn new(cfg: &SimConfig) -> Self {
        SimControl(Arc::new(Shared::new(cfg)))
    }

    /// The simulated now.
    pub fn now(&self) -> OffsetDateTime {
        self.0.clock.now()
    }

    /// Move the simulated clock forward (lifecycles apply at the next call).
    pub fn advance(&self, by: Duration) {
        self.0.clock.advance(by);
        self.0.with(|_, _| ());
    }

    /// Set the simulated clock.
    pub fn set_now(&self, t: OffsetDateTime) {
        self.0.clock.set_now(t);
        self.0.with(|_, _| ());
    }

    /// Rotate the key: from now on only `credentials` verify, and requests signed with the
    /// previous ones are refused (`InvalidAccessKey` for another access key id,
    /// `SignatureDoesNotMatch` for another secret under the same id).
    pub fn set_credentials(&self, credentials: Credentials) {
        self.0.set_credentials(credentials);
    }

    /// The regions served.
    pub fn regions(&self) -> &[String] {
        &self.0.regions
    }

    /// Seed a Tool in `region`; answers its id.
    pub fn seed_tool(&self, region: &str, tool: SeedTool) -> Result<String, SimError> {
        if !self.0.regions.iter().any(|r| r == region) {
            return Err(SimError::new(400, "InvalidRegion", "unknown region"));
        }
        self.0.with(|i, now| i.world.seed_tool(region, tool, now))
    }

    /// Seed a session on an existing Tool; answers its id. A session whose ExpireAt is
    /// already past expires at once.
    pub fn seed_session(&self, s: SeedSession) -> Result<String, SimError> {
        self.0.with(|i, now| i.world.seed_session(s, now))
    }

    /// Seed a snapshot on an existing Tool; answers its id.
    pub fn seed_snapshot(&self, s: SeedSnapshot) -> Result<String, SimError> {
        self.0.with(|i, now| i.world.seed_snapshot(s, now))
    }

    /// Seed many snapshots under one lock; answers their ids in order. Stops at the first
    /// refused seed (those before it stay).
    pub fn seed_snapshots(&self, all: Vec<SeedSnapshot>) -> Result<Vec<String>, SimError> {
        self.0.with(|i, now| {
            all.into_iter()
                .map(|s| i.world.seed_snapshot(s, now))
                .collect()
        })
    }

    /// How long new sessions stay `Creating`.
    pub fn set_session_ready_delay(&self, d: Duration) {
        self.0.with(|i, _| i.world.session_ready_delay = d);
    }

    /// How long a snapshot taken on request (CreateSessionSnapshot) stays `Creating`.
    pub fn set_snapshot_ready_delay(&self, d: Duration) {
        self.0.with(|i, _| i.world.snapshot_ready_delay = d);
    }

    /// How long a snapshot taken on request stays `Creating`.
    pub fn snapshot_ready_delay(&self) -> Duration {
        self.0.with(|i, _| i.world.snapshot_ready_delay)
    }

    /// The status snapshots taken on request reach after their delay: `Ready` (the default),
    /// or for instance `Failed` to test a snapshot that does not succeed.
    pub fn set_snapshot_outcome(&self, status: &str) {
        let status = status.to_string();
        self.0.with(|i, _| i.world.snapshot_outcome = status);
    }

    /// The status snapshots taken on request reach.
    pub fn snapshot_outcome(&self) -> String {
        self.0.with(|i, _| i.world.snapshot_outcome.clone())
    }

    /// How long the snapshot of an expired session stays `Creating` after its ExpireAt.
    pub fn set_expiry_snapshot_delay(&self, d: Duration) {
        self.0.with(|i, _| i.world.expiry_snapshot_delay = d);
    }

    /// How long after its ExpireAt the snapshot of an expired session is missing from listings
    /// (and from GetSessionSnapshot and Resume).
    pub fn set_expiry_snapshot_hidden(&self, d: Duration) {
        self.0.with(|i, _| i.world.expiry_snapshot_hidden = d);
    }

    /// The status the snapshot of an expired session reaches after its delay: `Ready` (the
    /// default) or, say, `Failed`.
    pub fn set_expiry_snapshot_outcome(&self, status: &str) {
        let status = status.to_string();
        self.0.with(|i, _| i.world.expiry_snapshot_outcome = status);
    }

    /// Whether the listings' `CreateTimeAfter` / `CreateTimeBefore` include their bound
    /// (default: exclusive). AgentKit does not say, so a reader of time slices is tried with
    /// both.
    pub fn set_inclusive_time_filters(&self, inclusive: bool) {
        self.0
            .with(|i, _| i.world.inclusive_time_filters = inclusive);
    }

    /// The next `n` sessions started (CreateSession, Resume) stay `Starting` forever.
    pub fn set_stuck_sessions(&self, n: u32) {
        self.0.with(|i, _| i.world.stuck_sessions = n);
    }

    /// Give session `id` a status of its own, any string (`Paused`, `Starting`, …), which sticks;
    /// `None` hands it back to its lifecycle. `NotFound` for an unknown session.
    pub fn set_session_status(&self, id: &str, status: Option<&str>) -> Result<(), SimError> {
        let status = status.map(str::to_string);
        if self.0.with(|i, _| i.world.set_session_status(id, status)) {
            Ok(())
        } else {
            Err(SimError::not_found(format!("no session {id}")))
        }
    }

    /// The AgentKit-time settings: `(expiry snapshot delay, hidden, outcome, stuck sessions
    /// still to come)`.
    pub fn agentkit_time(&self) -> (Duration, Duration, String, u32) {
        self.0.with(|i, _| {
            (
                i.world.expiry_snapshot_delay,
                i.world.expiry_snapshot_hidden,
                i.world.expiry_snapshot_outcome.clone(),
                i.world.stuck_sessions,
            )
        })
    }

    /// Late actions not yet carried out.
    pub fn late_pending(&self) -> usize {
        self.0.with(|i, _| i.late.len())
    }

    /// How long new Tools stay `Creating`.
    pub fn set_tool_ready_delay(&self, d: Duration) {
        self.0.with(|i, _| i.world.tool_ready_delay = d);
    }

    /// Tool writes per sliding second; `None` turns their limit off.
    pub fn set_tool_write_limit(&self, limit: Option<u32>) {
        self.set_rate_limit(crate::limits::TOOL_WRITES, limit);
    }

    /// Requests of `action` (or of [`crate::limits::TOOL_WRITES`]) per sliding second,
    /// account-wide; `None` turns its limit off.
    pub fn set_rate_limit(&self, action: &str, per_second: Option<u32>) {
        self.0.with(|i, _| i.limiter.limits.set(action, per_second));
    }

    /// Every rate limit in force at once.
    pub fn set_rate_limits(&self, limits: RateLimits) {
        self.0.with(|i, _| i.limiter.limits = limits);
    }

    /// The rate limits in force.
    pub fn rate_limits(&self) -> RateLimits {
        self.0.with(|i, _| i.limiter.limits.clone())
    }

    /// `(session ready delay, tool ready delay, tool write limit)`.
    pub fn settings(&self) -> (Duration, Duration, Option<u32>) {
        self.0.with(|i, _| {
            (
                i.world.session_ready_delay,
                i.world.tool_ready_delay,
                i.limiter.limits.0.get(crate::limits::TOOL_WRITES).copied(),
            )
        })
    }

    /// Add a fault (checked in the order added). Refuses an unknown action name (a typo would
    /// silently never fire), a rate outside 0..=1, or a status that is not 4xx/5xx.
    pub fn inject(&self, f: Fault) -> Result<(), SimError> {
        f.validate()?;
        if let Some(a) = &f.action {
            if actions::lookup(a).is_none() {
                return Err(SimError::invalid(format!("no action named {a}")));
            }
        }
        self.0.with(|i, _| i.faults.add(f));
        Ok(())
    }

    /// The faults in force (a `next` fault shows its remaining count).
    pub fn faults(&self) -> Vec<Fault> {
        self.0.with(|i, _| i.faults.list())
    }

    /// Remove every fault.
    pub fn clear_faults(&self) {
        self.0.with(|i, _| i.faults.clear());
    }

    /// Every counter, and the live sessions per UserSessionId now.
    pub fn counters(&self) -> Counters {
        self.0.with(|i, now| {
            let mut c = i.counters.clone();
            c.resumes = i.world.resumes.clone();
            c.live_sessions = i.world.live_per_usid(now);
            c.limits = i.limiter.counters();
            c.max_tool_writes_per_second = c.limit("CreateTool").most_in_a_second;
            c.throttled = c.limits.values().map(|l| l.refused).sum();
            c
        })
    }

    /// Zero every counter (per action, resumes, rate limits, signature failures, faults).
    pub fn reset_counters(&self) {
        self.0.with(|i, _| {
            i.counters = Counters::default();
            i.world.resumes.clear();
            i.limiter.reset_counters();
        });
    }

    /// The session as GetSession would show it, if it still exists.
    pub fn session(&self, id: &str) -> Option<types::Session> {
        self.0.with(|i, now| {
            let s = i.world.sessions.get(id)?;
            let tool_type = i.world.tools.get(&s.tool_id).map(|t| t.tool_type.as_str());
            Some(s.view(now, tool_type))
        })
    }

    /// The snapshot, if it exists.
    pub fn snapshot(&self, id: &str) -> Option<types::Snapshot> {
        self.0
            .with(|i, now| i.world.snapshots.get(id).map(|s| s.view(now)))
    }

    /// The Tool and its region, if it exists.
    pub fn tool(&self, id: &str) -> Option<(String, types::Tool)> {
        self.0.with(|i, now| {
            i.world
                .tools
                .get(id)
                .map(|t| (t.region.clone(), t.view(now)))
        })
    }

    /// Every session that exists, oldest first (for assertions).
    pub fn sessions(&self) -> Vec<types::Session> {
        self.0.with(|i, now| {
            let mut all: Vec<_> = i.world.sessions.values().collect();
            all.sort_by_key(|s| s.key());
            all.iter()
                .map(|s| {
                    let tt = i.world.tools.get(&s.tool_id).map(|t| t.tool_type.as_str());
                    s.view(now, tt)
                })
                .collect()
        })
    }

    /// Every snapshot that exists, oldest first (for assertions).
    pub fn snapshots(&self) -> Vec<types::Snapshot> {
        self.0.with(|i, now| {
            let mut all: Vec<_> = i.world.snapshots.values().collect();
            all.sort_by_key(|s| s.key());
            all.iter().map(|s| s.view(now)).collect()
        })
    }
}
