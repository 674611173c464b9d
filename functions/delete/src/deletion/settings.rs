//! The delete function's own settings: its lock's timings, its request budget, and how long
//! a tombstone is kept.

use super::*;

/// The delete function's own settings (not the wake's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteSettings {
    /// The lock: a delete's lease (60 s) bounds the work done under it.
    pub lock: LockSettings,
    /// Longest time one delete request works (API Gateway gives up at 30 s).
    pub budget: Duration,
    /// What the retention sweep keeps, and how it keeps time.
    pub sweep: crate::sweep::SweepSettings,
}

impl Default for DeleteSettings {
    fn default() -> Self {
        DeleteSettings {
            lock: LockSettings::default(),
            budget: REQUEST_BUDGET,
            sweep: crate::sweep::SweepSettings::default(),
        }
    }
}

/// How long a tombstone (and the memory of a deleted snapshot) answers: 30 days.
pub const TOMBSTONE_TTL_S: i64 = 30 * 24 * 3600;

/// The default budget of one delete request: API Gateway gives up at 30 s.
pub const REQUEST_BUDGET: Duration = Duration::from_secs(25);
