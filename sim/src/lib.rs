//! `snapwake-sim`: a strict, in-memory AgentKit served over HTTP on loopback.
//!
//! It is a test double of a remote SaaS for the tests, the benchmarks and the local dev
//! server, so it is strict: every action request must carry a valid Volcengine signature,
//! unknown actions, versions, regions, fields and filters are refused, `NextToken`s are
//! tamper-evident, and objects go through their lifecycles on a controllable clock.
//!
//! # Files
//! - `lib.rs` (this): the crate's documentation and its public names, re-exported.
//! - `config.rs`: [`SimConfig`].
//! - `simulator.rs`: [`router`], [`Simulator`] and [`RunningSim`]: serving on loopback.
//! - `in_process.rs`: [`InProcess`], the client's transport into a simulator in the same
//!   process, with no socket (a simulated deployment on one paused clock).
//! - `control/`: [`SimControl`], the in-process handle (`mod.rs`), and the unsigned `/_sim/`
//!   JSON surface over it (`http.rs`).
//! - `shared.rs`: one simulator's state, shared by its routes and handles, behind one lock.
//! - `server/`: the action endpoint: the request pipeline (`mod.rs`), signature check
//!   (`auth.rs`), response envelope (`envelope.rs`).
//! - `actions/`: one function per AgentKit action, by resource (`sessions.rs`,
//!   `snapshots.rs`, `tools.rs`), and the dispatch table (`mod.rs`).
//! - `state/`: the world (Tools, sessions, snapshots), its indexes and lifecycles; seeds.
//! - `clock.rs`, `faults.rs`, `limits.rs`, `pagination.rs`, `counters.rs`, `error.rs`.
//!
//! # Transport
//! `POST /?Action=<Action>&Version=2025-10-30`, JSON body in PascalCase (the types of
//! [`snapwake::agentkit::types`]). Answers `{"ResponseMetadata": {RequestId, Action, Version,
//! Service: "agentkit", Region, Error?}, "Result": {...}}`; errors carry no `Result` and a
//! non-200 status (see `error.rs` for every code). Checks, in order: signature (401), action
//! (400 `InvalidAction`), version (400 `InvalidVersion`), region (400 `InvalidRegion`), then
//! the request is counted as received, its rate limit (429), faults, body and
//! parameters (400), objects (404/409).
//!
//! # Signatures
//! Verified with [`signature::verify`] over the `Host` header as received, the
//! query pairs as received (percent-decoded), path `/` and the body bytes. `X-Date` must be
//! within 15 minutes of *wall-clock* time (not the simulated clock), as a real service would
//! check; when the configured credentials have a session token, `X-Security-Token` must be
//! signed and equal to it. [`SimControl::set_credentials`] rotates the key: requests signed
//! with the old one are refused from then on (in-process only; not on `/_sim/`). Codes: `MissingAuthenticationToken`, `InvalidAuthorization`,
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
//! - Session and Tool ready delays: 0 (objects are `Ready` at once) unless configured; expiry
//!   snapshots take 3 s (above).
//! - Timestamps: RFC 3339 UTC with whole seconds, e.g. `2026-12-02T10:00:00Z`.
//! - Sessions always carry their `Endpoint` (`https://<SessionId>.sandbox.example/?auth=<hex>`);
//!   the simulator never logs it.
//! - AgentKit keeps its own time, and so does the simulator (docs/agentkit.md): the snapshot of
//!   an expired session is `Creating` until `ExpireAt` + the expiry snapshot delay (3 s by
//!   default), then the expiry snapshot outcome (`Ready`, or `Failed`); it can be missing from
//!   listings, GetSessionSnapshot and Resume until `ExpireAt` + a hidden time (0 by default).
//!   The next N sessions started can be told to stay `Starting` forever, and any session can
//!   be given any status (`Paused`, …), which sticks. A fault with `apply_after_ms` answers
//!   its error without acting and carries the action out that much later on the simulated
//!   clock (counted in `late_applied`).
//! - DeleteSession ends a session without a snapshot. Snapshots come from expiry (of sessions
//!   still active at expiry on a Tool whose `EnableSnapshot` is true when the expiry is
//!   applied, lazily, at the next call after `ExpireAt`; `Reason: Expired`) and from
//!   CreateSessionSnapshot (`Creating` for the snapshot ready delay, then `Ready`; `Reason:
//!   Manual`; refused on a Tool without snapshots, 400 `OperationDenied`, or an ended session,
//!   409 `InvalidResource.Status`). SetSessionTtl moves a live session's `ExpireAt` to now +
//!   the TTL. No session lives more than 8 h from its start or its last SetSessionTtl: a
//!   longer `Ttl` is cut to 8 h (`actions/params.rs`).
//! - Tool names are not unique; duplicates are visible by listing.
//! - Rate limits (`limits.rs`): per action, account-wide, a sliding second of real time; only
//!   accepted requests enter the window; 429 `Throttling` with `Retry-After`. By default only
//!   the Tool writes (CreateTool and UpdateTool share 3 per second); [`RateLimits::agentkit`]
//!   (or `SNAPWAKE_SIM_RATE_LIMITS=agentkit`) limits every action as AgentKit is assumed to.
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
//!   "snapshot_ready_delay_ms": 0, "snapshot_outcome": "Ready", "tool_write_limit": 3,
//!   "expiry_snapshot_delay_ms": 3000, "expiry_snapshot_hidden_ms": 0,
//!   "expiry_snapshot_outcome": "Ready", "stuck_sessions": 0, "rate_limits": {"ToolWrites":
//!   3}}`; `POST /_sim/settings` with any of those fields changes them (`"tool_write_limit":
//!   null` turns the Tool writes' limit off; `"rate_limits": {"GetSession": 50,
//!   "ListSessions": null}` sets or turns off the limits named, an unknown action is a 400;
//!   `"snapshot_outcome": "Failed"` makes requested snapshots fail, `"expiry_snapshot_outcome":
//!   "Failed"` expiry snapshots; `"stuck_sessions": n` keeps the next n sessions `Starting`)
//! - `POST /_sim/sessions/{id}/status` `{"status": "Paused"}` gives a session a status of its
//!   own (`null`: back to its lifecycle); 404 for an unknown session
//! - `GET /_sim/faults` → `[…]`; `POST /_sim/faults` `{"action": "CreateSession",
//!   "error": {"code": "ErrCreateSessionFail", "status": 500, "retry_after": null},
//!   "latency_ms": 0, "trigger": {"next": 1}, "after_apply": true}` → `{"faults": n}`
//!   (`trigger` is `{"next": n}`, `{"rate": 0.2}` or `"always"`; `action` null = all actions;
//!   `"error": {"status": 503, "bare": true}` answers a bare status with no envelope and no
//!   code; with `after_apply` the action runs first and `latency_ms` delays only the answer;
//!   with `"apply_after_ms": n` it does not run now but n ms later, simulated time);
//!   `DELETE /_sim/faults` clears them
//! - `GET /_sim/counters` → [`Counters`] as JSON; `POST /_sim/counters/reset`

mod actions;
mod clock;
mod config;
mod control;
mod counters;
mod error;
mod faults;
mod in_process;
mod pagination;
mod server;
mod shared;
pub mod signature;
mod simulator;
mod state;
mod limits;

pub use config::SimConfig;
pub use control::SimControl;
pub use counters::{ActionCounters, Counters};
pub use error::SimError;
pub use faults::{Fault, FaultError, Trigger};
pub use in_process::InProcess;
pub use limits::{
    from_env as limits_from_env, limit_of, parse as parse_limits, LimitCounters, RateLimits,
    DEFAULT_TOOL_WRITE_LIMIT, RATE_LIMITS_ENV, TOOL_WRITES,
};
pub use pagination::DEFAULT_PAGE_SIZE;
pub use simulator::{router, RunningSim, Simulator};
pub use state::{SeedSession, SeedSnapshot, SeedTool, REASON_EXPIRED, REASON_MANUAL};
