//! The store port: how snapwake reads and writes its one DynamoDB table, and its two adapters,
//! [`dynamo::DynamoStore`] and (feature `memory`) [`memory::MemoryStore`], which honour exactly
//! the same conditions. Every write is a conditional update (docs/table.md): the store, not the
//! caller, increments `version` (and `fence` on an acquire), so no write moves it backwards, and
//! a failed condition returns the current record, so a loser decides again without a read.
//! Records past `expires_at` read as absent everywhere (TTL deletion is lazy).

pub mod budget;
pub mod dynamo;
pub mod keys;
pub mod schedule;
pub mod stream;
pub mod update;
#[cfg(feature = "memory")]
pub mod memory;
pub mod table;
mod port;

pub use budget::{BudgetStore, Reserved, Slowdown};
pub use port::*;
pub use port::{Answer, Call, Layer, Within, STORE_GRACE};
pub use schedule::{DueCursor, DuePage, ScheduleStore};
pub use stream::{ChangeSource, RecordChange};
