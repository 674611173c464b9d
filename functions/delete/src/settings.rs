//! The delete function's own settings: its lock's timings, its request budget, the sweep's
//! and the offboarding's.

use std::time::Duration;

use snapwake::lock::LockSettings;

use crate::offboard::OffboardSettings;
use crate::sweep::SweepSettings;

/// The delete function's own settings (not the wake's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteSettings {
    /// The lock: a delete's lease (60 s) bounds the work done under it.
    pub lock: LockSettings,
    /// Longest time one delete request works (API Gateway gives up at 30 s).
    pub budget: Duration,
    /// What the retention sweep keeps, and how it keeps time.
    pub sweep: SweepSettings,
    /// Whom offboarding events are accepted from.
    pub offboarding: OffboardSettings,
}

impl Default for DeleteSettings {
    fn default() -> Self {
        DeleteSettings {
            lock: LockSettings::default(),
            budget: REQUEST_BUDGET,
            sweep: SweepSettings::default(),
            offboarding: OffboardSettings::default(),
        }
    }
}

impl DeleteSettings {
    /// The settings a deployed function reads from its configuration.
    pub fn from_config(config: &snapwake::config::Config) -> Self {
        let mut settings = DeleteSettings::default();
        settings.sweep.policy = config.retention.into();
        settings.offboarding.sources = config.offboarding_sources.clone();
        settings
    }
}

/// The default budget of one delete request: API Gateway gives up at 30 s.
pub const REQUEST_BUDGET: Duration = Duration::from_secs(25);
