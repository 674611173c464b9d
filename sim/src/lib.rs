//! `snapwake-sim`: a strict, in-memory AgentKit served over HTTP on loopback.
//!
//! It is a test double of a remote SaaS for the tests, the benchmarks and the local dev
//! server, so it is strict: every action request must carry a valid Volcengine signature,
//! unknown actions, versions, regions, fields and filters are refused, `NextToken`s are
//! tamper-evident, and objects go through their lifecycles on a controllable clock.
//!
//! # Files
//! - `mod.rs` (this): the public API ([`SimConfig`], [`Simulator`], [`RunningSim`],
//!   [`SimControl`], [`router`]).
//! - `server.rs`: the action endpoint: signature check, dispatch, faults, throttle, envelope.
//! - `actions.rs`: one function per AgentKit action.
//! - `state.rs`: the world (Tools, sessions, snapshots), its indexes and lifecycles; seeds.
//! - `control.rs`: the unsigned `/_sim/` JSON surface.
//! - `clock.rs`, `faults.rs`, `throttle.rs`, `pagination.rs`, `counters.rs`, `error.rs`.
//!
//! # Transport
//! `POST /?Action=<Action>&Version=2025-10-30`, JSON body in PascalCase (the types of
//! [`snapwake::agentkit::types`]). Answers `{"ResponseMetadata": {RequestId, Action, Version,
//! Service: "agentkit", Region, Error?}, "Result": {...}}`; errors carry no `Result` and a
//! non-200 status (see `error.rs` for every code). Checks, in order: signature (401), action
//! (400 `InvalidAction`), version (400 `InvalidVersion`), region (400 `InvalidRegion`), then
//! the request is counted as received, the tool-write throttle (429), faults, body and
//! parameters (400), objects (404/409).
//!
//! # Signatures
//! Verified with [`snapwake::agentkit::signer::verify`] over the `Host` header as received, the
//! query pairs as received (percent-decoded), path `/` and the body bytes. `X-Date` must be
//! within 15 minutes of *wall-clock* time (not the simulated clock), as a real service would
//! check; when the configured credentials have a session token, `X-Security-Token` must be
//! signed and equal to it. Codes: `MissingAuthenticationToken`, `InvalidAuthorization`,
//! `InvalidAccessKey`, `SignatureDoesNotMatch`, `SignatureExpired`, `InvalidSecurityToken`,
//! all HTTP 401 and counted in [`Counters::signature_failures`].
//!
//! # Regions
//! The region is the one in the credential scope. Each Tool lives in one region; an action
//! on a Tool of another region answers `InvalidResource.NotFound` (404); ListTools lists that
//! region only. Known regions are configured ([`SimConfig::regions`]).
//!
//! # Defaults and choices
//! - Page size when `MaxResults` is absent: 10; `MaxResults` 0 or above 100 → 400.
//! - `NextToken`: keyset cursor over `(CreatedAt, id)` order, HMAC-authenticated with a random
//!   per-simulator key and bound to the action, region, Tool and filters (not `MaxResults`).
//!   An empty `NextToken` counts as absent. See `pagination.rs`.
//! - Session and Tool ready delays: 0 (objects are `Ready` at once) unless configured.
//! - Timestamps: RFC 3339 UTC with whole seconds, e.g. `2026-12-02T10:00:00Z`.
//! - Sessions always carry their `Endpoint` (`https://<SessionId>.sandbox.example/?auth=<hex>`);
//!   the simulator never logs it.
//! - DeleteSession ends a session without a snapshot. Snapshots come from expiry (of sessions
//!   still active at expiry on a Tool whose `EnableSnapshot` is true when the expiry is
//!   applied, lazily, at the next call after `ExpireAt`; `Reason: Expired`) and from
//!   CreateSessionSnapshot (`Creating` for the snapshot ready delay, then `Ready`; `Reason:
//!   Manual`; refused on a Tool without snapshots, 400 `OperationDenied`, or an ended session,
//!   409 `InvalidResource.Status`). SetSessionTtl moves a live session's `ExpireAt` to now +
//!   the TTL.
//! - Tool names are not unique; duplicates are visible by listing.
//! - Tool write throttle: 3 per sliding second, real time, shared by CreateTool and
//!   UpdateTool; only accepted writes enter the window; 429 `Throttling` with `Retry-After`.
//! - Ids are random hex from the seeded RNG (`t-…`, `sess-…`, `snap-…`), repeatable for one
//!   seed and one order of calls.
//!
//! # Control surface (`/_sim/`, unsigned, loopback only; JSON in and out, snake_case)
//! Errors answer `{"error": {"code", "message"}}` with a 4xx status.
//! - `GET /_sim/clock` → `{"now": "2026-12-02T10:00:00Z"}`
//! - `POST /_sim/clock/advance` `{"seconds": 28800}` → `{"now": …}` (fractions allowed)
//! - `POST /_sim/clock/set` `{"now": "2026-12-02T10:00:00Z"}` → `{"now": …}`
//! - `POST /_sim/tools` `{"region": "cn-beijing", "tool_id": "t-1", "name": "codex",
//!   "tool_type": "CodeEnv", "project_name": "default", "enable_snapshot": true,
//!   "status": "Ready", "envs": [{"Key": "A", "Value": "1"}]}` → `{"tool_id": "t-1"}`
//!   (every field but `name` and `tool_type` optional; `region` defaults to the first region)
//! - `GET /_sim/tools/{id}` → `{"region": "cn-beijing", "tool": {…AgentKit Tool…}}`
//! - `POST /_sim/sessions` `{"tool_id": "t-1", "session_id": "s-1", "user_session_id": "u-1",
//!   "status": "Ready", "created_at": "2026-12-02T10:00:00Z", "ttl_secs": 28800,
//!   "metadata": [{"Key": "Username", "Type": "String", "Value": "alice"}]}`
//!   → `{"session_id": "s-1"}`
//! - `GET /_sim/sessions/{id}` → the AgentKit Session
//! - `POST /_sim/snapshots` `{"tool_id": "t-1", "snapshot_id": "snap-1", "session_id": "s-0",
//!   "user_session_id": "u-1", "status": "Ready", "reason": "Expired",
//!   "created_at": "2026-12-01T10:00:00Z", "session_metadata": [{"Key": "Username",
//!   "Value": "alice"}]}` → `{"snapshot_id": "snap-1"}`; or a JSON array of those →
//!   `{"snapshot_ids": [...]}` (bulk, one lock)
//! - `GET /_sim/snapshots/{id}` → the AgentKit Snapshot
//! - `GET /_sim/settings` → `{"session_ready_delay_ms": 0, "tool_ready_delay_ms": 0,
//!   "snapshot_ready_delay_ms": 0, "snapshot_outcome": "Ready", "tool_write_limit": 3}`;
//!   `POST /_sim/settings` with any of those fields changes them (`"tool_write_limit": null`
//!   turns the throttle off; `"snapshot_outcome": "Failed"` makes requested snapshots fail)
//! - `GET /_sim/faults` → `[…]`; `POST /_sim/faults` `{"action": "CreateSession",
//!   "error": {"code": "ErrCreateSessionFail", "status": 500, "retry_after": null},
//!   "latency_ms": 0, "trigger": {"next": 1}, "after_apply": true}` → `{"faults": n}`
//!   (`trigger` is `{"next": n}`, `{"rate": 0.2}` or `"always"`; `action` null = all actions;
//!   `"error": {"status": 503, "bare": true}` answers a bare status with no envelope and no
//!   code; with `after_apply` the action runs first and `latency_ms` delays only the answer);
//!   `DELETE /_sim/faults` clears them
//! - `GET /_sim/counters` → [`Counters`] as JSON; `POST /_sim/counters/reset`

mod actions;
mod clock;
mod control;
mod counters;
mod error;
mod faults;
mod pagination;
mod server;
mod state;
mod throttle;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use time::OffsetDateTime;

pub use counters::{ActionCounters, Counters};
pub use error::SimError;
pub use faults::{Fault, FaultError, Trigger};
pub use pagination::DEFAULT_PAGE_SIZE;
pub use state::{SeedSession, SeedSnapshot, SeedTool, REASON_EXPIRED, REASON_MANUAL};
pub use throttle::DEFAULT_TOOL_WRITE_LIMIT;

use snapwake::agentkit::signer::Credentials;
use snapwake::agentkit::types;

/// How a simulator starts.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The only credentials whose signatures verify.
    pub credentials: Credentials,
    /// Regions served; the first is the default region of seeded Tools.
    pub regions: Vec<String>,
    /// How long a new session stays `Creating` (simulated time).
    pub session_ready_delay: Duration,
    /// How long a new Tool stays `Creating` (simulated time).
    pub tool_ready_delay: Duration,
    /// CreateTool+UpdateTool per sliding second; `None` = no throttle.
    pub tool_write_limit: Option<u32>,
    /// Seeds the id and fault RNGs.
    pub seed: u64,
    /// Port on 127.0.0.1; 0 = any free port.
    pub port: u16,
}

impl Default for SimConfig {
    /// AK `sim-access-key` / SK `sim-secret-key`, regions `cn-beijing` and `cn-shanghai`,
    /// delays 0, throttle 3/s, seed 0, any port.
    fn default() -> Self {
        SimConfig {
            credentials: Credentials::new("sim-access-key", "sim-secret-key", None),
            regions: vec!["cn-beijing".into(), "cn-shanghai".into()],
            session_ready_delay: Duration::ZERO,
            tool_ready_delay: Duration::ZERO,
            tool_write_limit: Some(DEFAULT_TOOL_WRITE_LIMIT),
            seed: 0,
            port: 0,
        }
    }
}

/// Everything behind one lock (never held across an `.await`).
pub(crate) struct Inner {
    pub(crate) world: state::World,
    pub(crate) faults: faults::Faults,
    pub(crate) fault_rng: StdRng,
    pub(crate) throttle: throttle::Throttle,
    /// Only the recorded parts; the derived ones are filled in when read.
    pub(crate) counters: Counters,
}

pub(crate) struct Shared {
    pub(crate) credentials: Credentials,
    pub(crate) regions: Vec<String>,
    pub(crate) clock: clock::Clock,
    pub(crate) tokens: pagination::Tokens,
    inner: Mutex<Inner>,
}

impl Shared {
    /// Lock, apply due lifecycles, and run `f` with the simulated now.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut Inner, OffsetDateTime) -> R) -> R {
        let mut inner = self.lock();
        let now = self.clock.now();
        inner.world.tick(now);
        f(&mut inner, now)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves a consistent-enough world for a test double.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The handle tests (and the control surface) use: cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct SimControl(pub(crate) Arc<Shared>);

impl SimControl {
    /// A simulator's state without a server (serve it with [`router`]).
    pub fn new(cfg: &SimConfig) -> Self {
        let key: [u8; 32] = rand::thread_rng().gen();
        SimControl(Arc::new(Shared {
            credentials: cfg.credentials.clone(),
            regions: cfg.regions.clone(),
            clock: clock::Clock::default(),
            tokens: pagination::Tokens::new(key),
            inner: Mutex::new(Inner {
                world: state::World::new(cfg.seed, cfg.session_ready_delay, cfg.tool_ready_delay),
                faults: faults::Faults::default(),
                fault_rng: StdRng::seed_from_u64(cfg.seed ^ 0x5eed_fa17),
                throttle: throttle::Throttle::new(cfg.tool_write_limit),
                counters: Counters::default(),
            }),
        }))
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

    /// How long new Tools stay `Creating`.
    pub fn set_tool_ready_delay(&self, d: Duration) {
        self.0.with(|i, _| i.world.tool_ready_delay = d);
    }

    /// Tool writes per sliding second; `None` turns the throttle off.
    pub fn set_tool_write_limit(&self, limit: Option<u32>) {
        self.0.with(|i, _| i.throttle.limit = limit);
    }

    /// `(session ready delay, tool ready delay, tool write limit)`.
    pub fn settings(&self) -> (Duration, Duration, Option<u32>) {
        self.0.with(|i, _| {
            (
                i.world.session_ready_delay,
                i.world.tool_ready_delay,
                i.throttle.limit,
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
            c.max_tool_writes_per_second = i.throttle.max_in_window;
            c.throttled = i.throttle.throttled;
            c
        })
    }

    /// Zero every counter (per action, resumes, throttle, signature failures, faults).
    pub fn reset_counters(&self) {
        self.0.with(|i, _| {
            i.counters = Counters::default();
            i.world.resumes.clear();
            i.throttle.reset_counters();
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

/// The simulator's HTTP routes (actions at `/`, control under `/_sim/`), to mount in another
/// server. The control surface is unsigned: serve it on loopback only.
pub fn router(control: SimControl) -> axum::Router {
    server::routes()
        .merge(control::routes())
        .with_state(control)
}

/// Starts simulators.
pub struct Simulator;

impl Simulator {
    /// Bind `127.0.0.1:cfg.port` and serve in a background task.
    pub async fn start(cfg: SimConfig) -> std::io::Result<RunningSim> {
        if cfg.regions.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the simulator needs at least one region",
            ));
        }
        let control = SimControl::new(&cfg);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", cfg.port)).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = router(control.clone());
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!(error = %e, "sim: server stopped with an error");
            }
        });
        tracing::info!(%addr, "sim: AgentKit simulator listening");
        Ok(RunningSim {
            addr,
            control,
            stop: Some(tx),
            task: Some(task),
        })
    }
}

/// A simulator serving on loopback. Dropping it stops the server.
pub struct RunningSim {
    addr: SocketAddr,
    control: SimControl,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RunningSim {
    /// `http://127.0.0.1:PORT`, the `AGENTKIT_ENDPOINT` to give a client.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The control handle.
    pub fn control(&self) -> SimControl {
        self.control.clone()
    }

    /// Stop serving: in-flight requests get up to 2 s to finish.
    pub async fn shutdown(mut self) {
        self.stop_gracefully().await;
    }

    /// Serve until `signal` completes (e.g. `tokio::signal::ctrl_c()`), then shut down.
    pub async fn serve_until<F: Future>(mut self, signal: F) {
        if let Some(task) = self.task.as_mut() {
            tokio::select! {
                _ = signal => {}
                _ = task => { self.task = None; }
            }
        }
        self.stop_gracefully().await;
    }

    async fn stop_gracefully(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(mut task) = self.task.take() {
            if tokio::time::timeout(Duration::from_secs(2), &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        // Kept-alive client connections would hold a graceful shutdown open; a dropped
        // simulator must free its port now.
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
