//! The store port: how snapwake reads and writes its one DynamoDB table, and two adapters —
//! [`dynamo::DynamoStore`] (production, and tests against DynamoDB Local) and, behind the
//! `memory` feature, [`memory::MemoryStore`] (local runs). Both honour exactly the same
//! conditions, which one contract test suite checks against both.
//!
//! Every write is conditional (docs/table.md). A write is an *update* of named fields: the
//! store, not the caller, increments `version` (and `fence` on an acquire), so a holder's
//! fenced write after a concurrent complete-by-anyone never moves the version backwards.
//! A failed condition returns the current record in the same round trip (DynamoDB's
//! `ReturnValuesOnConditionCheckFailure = ALL_OLD`), so a loser decides again without a read.
//!
//! Records whose `expires_at` has passed read as absent everywhere (TTL deletion is lazy), and
//! [`Condition::Absent`] holds for them.
//!
//! Files: `port.rs` the port (the trait, conditions, changes, errors); `keys.rs` the item
//! layout and owner-index cursor both adapters share; `dynamo/` the DynamoDB adapter;
//! `table.rs` creating the table (tests and local runs; production's comes from infra);
//! `memory.rs` the in-memory adapter.

pub mod budget;
pub mod dynamo;
pub mod keys;
pub mod schedule;
pub mod stream;
pub mod update;
#[cfg(feature = "memory")]
pub mod memory;
pub mod table;
pub mod layer;
mod port;

pub use budget::{BudgetStore, Reserved, Slowdown};
pub use layer::{Answer, Call, Layer, Within, STORE_GRACE};
pub use port::*;
pub use schedule::{DueCursor, DuePage, ScheduleStore};
pub use stream::{ChangeSource, RecordChange};
