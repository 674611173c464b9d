//! The per-agent lock and the changes carried out under it (docs/wake-protocol.md): the one
//! place that says how the agent record is taken, written and given back. Wake, sleep,
//! create, delete (HTTP and the cleanup events) and the deploy lock all go through it; none
//! of them writes a lock field of its own.
//!
//! The record is a lease-based lock with a fence. Every write is conditional, of three kinds:
//!
//! - **acquire** ([`agent::AgentLock::acquire`]): a CAS on the version seen (or on absence)
//!   that sets a fresh holder token, `fence + 1` and a lease. A wake or a create also starts
//!   a **new generation** (the last wake's session, snapshot, expiry and error cleared), so
//!   nobody waits on an earlier wake's session. A lost CAS hands back the winner's record.
//! - **fenced** ([`agent::AgentLock::write`]): `holder = me AND fence = mine`. Idempotent
//!   under its fence, so an ambiguous one is sent again; a failed condition is checked
//!   against **the fields the write set** (holder and fence alone prove nothing).
//! - **by anyone** ([`agent::AgentLock::write_by_anyone`]): `state = waking AND fence = f AND
//!   session_id = s` (a sleep: its snapshot), so whoever sees the change done (or failed)
//!   settles it, and a dead holder never leaves an agent stuck until its lease runs out.
//!   Poll leases and a session found by a reconcile are CASes on the version seen.
//!
//! A lease counts as expired only once `lease_until_ms + skew margin < now`. There are no
//! heartbeats (Lambda freezes between invocations): a lease covers one invocation's work.
//! Every call goes through the caller's bounded store (`store::Within`), so a slow table
//! becomes an answer before API Gateway's 30 s, never a hang.
//!
//! Files: `settings.rs` (what every user of the lock shares), `decide.rs` (the pure
//! [`decide`]), `agent.rs` (the lock on an agent record), `driver.rs` (the steps a wake and a
//! sleep take under it), `document.rs` (the deploy and refresh locks, on a store document).

pub mod agent;
mod decide;
pub mod document;
pub(crate) mod driver;
mod settings;

pub use agent::{Acquire, Acquired, AgentLock, Generation, Held, Written};
pub use decide::{decide, Decision, Intent};
pub use document::{DocumentAcquired, DocumentHold, DocumentLock};
pub use driver::Agents;
pub use settings::{LockSettings, WakeSettings, MIN_TTL};
