//! The per-agent lock and the changes carried out under it (docs/wake-protocol.md). Wake, sleep,
//! create, delete and the deploy lock all go through it; none writes a lock field of its own.
//!
//! Every write is conditional, of three kinds:
//!
//! - **acquire** ([`agent::AgentLock::acquire`]): a CAS on the version seen (or absence) setting a
//!   fresh holder token, `fence + 1` and a lease; a wake or create starts a new generation.
//! - **fenced** ([`agent::AgentLock::write`]): `holder = me AND fence = mine`; idempotent, so an
//!   ambiguous one is sent again, and a failed one is checked against the fields it set.
//! - **by anyone** ([`agent::AgentLock::write_by_anyone`]): `state = waking AND fence = f AND
//!   session_id = s` (a sleep: its snapshot), so a dead holder never leaves an agent stuck.
//!
//! A lease expires only once `lease_until_ms + skew margin < now`. No heartbeats (Lambda freezes
//! between invocations): a lease covers one invocation's work.

pub mod agent;
pub mod document;

pub use agent::Agents;
pub use agent::{decide, Decision, Intent};
pub use agent::{Acquire, Acquired, AgentLock, Generation, Held, Written};
pub use agent::{IdlePolicy, LockSettings, WakeSettings, MIN_TTL};
pub use document::{DocumentAcquired, DocumentHold, DocumentLock};
