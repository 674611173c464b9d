//! The simulated world: Tools, sessions and snapshots, their indexes, and their lifecycles.
//!
//! Lifecycles are evaluated lazily: readiness is derived from the clock when an object is read
//! (`Creating` until its `ready_at`), and expiry is applied by [`World::tick`], which every
//! request and every control call runs first. No background task is needed, and a jump of the
//! simulated clock takes effect at the next call.
//!
//! Listings are ordered by `(CreatedAt, id)` through `BTreeSet` indexes per Tool (and for
//! snapshots per UserSessionId too, so listing one owner among 20,000 snapshots does not scan
//! them all).
//!
//! - `records.rs`: the objects as stored (a Tool, a session, a snapshot) and how each reads;
//! - `world.rs`: [`World`] itself: its fields, ids, the index primitives and expiry;
//! - `tools.rs`, `sessions.rs`, `snapshots.rs`: how each kind enters and leaves the world,
//!   its indexes kept in step;
//! - `seed.rs`: the public seed types, and seeding.
//!
//! This file only names them; the files import each other one way (records ← world ← kinds).

mod records;
mod seed;
mod sessions;
mod snapshots;
#[cfg(test)]
mod tests;
mod tools;
mod world;

pub(crate) use records::{SnapRec, ToolRec};
pub use records::{REASON_EXPIRED, REASON_MANUAL};
pub use seed::{SeedSession, SeedSnapshot, SeedTool};
pub(crate) use world::World;
pub use world::DEFAULT_EXPIRY_SNAPSHOT_DELAY;
